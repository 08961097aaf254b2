"""A batch whose structure passed verification is checked only on what its structure leaves out
(``shoal/engine/node/schedule/verified.py``): these batches repeat a verified structure and differ
exactly there, and must still be rejected, or run with the reference engine's values."""

from __future__ import annotations

import numpy as np
import pytest
from test_engine_node_repeat import walk  # noqa: F401  (every case with the compiled loops and with the Python ones)

from shoal.bytecode import BaseDecl, Batch, BytecodeError, Const, Instruction, View, make_attrs
from shoal.bytecode.boundary import VerifyAtExecute, execute_limits
from shoal.engine import ReferenceConfig, ReferenceEngine
from shoal.engine.node import NodeConfig, NodeEngine

F8 = np.dtype("f8")
N = 16


def _view(base: object, offset: int = 0, shape: tuple = (N,)) -> View:
    return View(base, F8, offset, shape, (8,))  # type: ignore[arg-type]


def _step(source: int, target: int, scalar: float, data: np.ndarray | None = None) -> Batch:
    """``target = source * scalar + 1`` then ``source`` released; ``target`` (and ``source`` when
    ``data`` is given) declared here."""
    bases = [BaseDecl(target, F8, N)]
    carried = {}
    if data is not None:
        bases.insert(0, BaseDecl(source, F8, N))
        carried[source] = data
    return Batch(
        bases=bases,
        data=carried,
        instructions=[
            Instruction("multiply", (_view(target),), (_view(source), Const(scalar))),
            Instruction("add", (_view(target),), (_view(target), Const(1.0))),
            Instruction("release", (), (), make_attrs(base=source)),
        ],
    )


def _engines(direct: bool, **limits: str) -> tuple[NodeEngine, ReferenceEngine]:
    verify = execute_limits(limits, VerifyAtExecute.ON)
    node = NodeEngine(NodeConfig(threads=1, compile="off", direct_work=(1 << 22) if direct else 0, verify=verify))
    return node, ReferenceEngine(ReferenceConfig(verify=verify))


def _both(engines: tuple, batch: Batch) -> None:
    for engine in engines:
        engine.execute(Batch(list(batch.bases), {k: v.copy() for k, v in batch.data.items()}, list(batch.instructions)))


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "planned"])
def test_a_repeated_structure_is_admitted_by_its_key_and_computes_the_same_values(direct):
    node, reference = engines = _engines(direct)
    try:
        _both(engines, _step(1, 2, 0.5, np.arange(float(N))))
        for step in range(6):
            _both(engines, _step(2 + step, 3 + step, 0.25 * step))
        assert node._verified.skipped >= 3
        np.testing.assert_array_equal(node.fetch(_view(8)), reference.fetch(_view(8)))
    finally:
        node.shutdown()
        reference.shutdown()


def _warmed(direct: bool, **limits: str) -> NodeEngine:
    """An engine that verified the structure of ``_step`` with carried data in full, three times."""
    node, _ = _engines(direct, **limits)
    for step in range(3):
        node.execute(_step(100 + 2 * step, 101 + 2 * step, 2.0, np.ones(N)))
    return node


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "planned"])
def test_a_declared_base_that_is_already_live_is_rejected(direct):
    node = _warmed(direct)
    try:
        skipped = node._verified.skipped
        with pytest.raises(BytecodeError, match="already known"):
            node.execute(_step(105, 101, 2.0, np.ones(N)))  # 101 is live
        assert node._verified.skipped == skipped
        np.testing.assert_array_equal(node.fetch(_view(101)), np.full(N, 3.0))
    finally:
        node.shutdown()


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "planned"])
@pytest.mark.parametrize(
    "data",
    [np.ones(N - 1), np.ones(N, np.float32), np.ones((N, 1)), np.ones(2 * N)[::2], [1.0] * N],
    ids=["short", "float32", "2-d", "strided", "list"],
)
def test_carried_data_that_does_not_match_its_declaration_is_rejected(direct, data):
    node = _warmed(direct)
    try:
        with pytest.raises(BytecodeError, match="data for base 200"):
            node.execute(_step(200, 201, 2.0, data))  # type: ignore[arg-type]
    finally:
        node.shutdown()


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "planned"])
@pytest.mark.parametrize("base", [-7, 300.0, True], ids=["negative", "float", "bool"])
def test_an_id_that_is_not_a_non_negative_int_is_rejected(direct, base):
    node = _warmed(direct)
    try:
        with pytest.raises(BytecodeError):
            node.execute(_step(base, 301, 2.0, np.ones(N)))  # type: ignore[arg-type]
    finally:
        node.shutdown()


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "planned"])
def test_a_view_past_its_base_is_rejected_after_the_structure_was_verified(direct):
    node = _warmed(direct)
    try:
        bad = _step(400, 401, 2.0, np.ones(N))
        bad.instructions[0] = Instruction("multiply", (_view(401),), (_view(400, offset=8), Const(2.0)))
        with pytest.raises(BytecodeError, match="outside base"):
            node.execute(bad)
    finally:
        node.shutdown()


def test_an_engine_with_limits_verifies_every_batch_in_full():
    node = _warmed(False, max_batch_bytes="100000")
    try:
        node.execute(_step(500, 501, 2.0, np.ones(N)))
        assert node._verified.skipped == 0
        with pytest.raises(BytecodeError):
            node.execute(_step(502, 503, 2.0, np.ones(20000)))
    finally:
        node.shutdown()


@pytest.mark.parametrize("direct", [True, False], ids=["direct", "planned"])
def test_a_malformed_batch_is_rejected_with_the_verifiers_message(direct):
    node = _warmed(direct)
    try:
        bad = _step(600, 601, 2.0, np.ones(N))
        bad.instructions[0] = Instruction("multiply", (_view(601, shape=("16",)),), (_view(600), Const(2.0)))  # type: ignore[arg-type]
        with pytest.raises(BytecodeError):
            node.execute(bad)
        bad.instructions[0] = "multiply"  # type: ignore[call-overload]
        with pytest.raises(BytecodeError):
            node.execute(bad)
    finally:
        node.shutdown()


def test_batches_whose_views_move_every_time_stop_being_keyed(monkeypatch):
    from shoal.engine.node import engine as node_engine

    keyed = []
    original = node_engine.batch_shape
    monkeypatch.setattr(node_engine, "batch_shape", lambda batch, live: keyed.append(batch) or original(batch, live))
    node, _ = _engines(True)
    try:
        node.execute(Batch(bases=[BaseDecl(1, F8, 4 * N)], data={1: np.arange(4.0 * N)}))
        for row in range(1, 3 * N):
            batch = Batch(bases=[BaseDecl(1000 + row, F8, N)], instructions=[
                Instruction("multiply", (_view(1000 + row),), (_view(1, offset=8 * row), Const(2.0))),
            ])
            node.execute(batch)
            np.testing.assert_array_equal(node.fetch(_view(1000 + row)), 2.0 * np.arange(row, row + N))
        assert len(keyed) == 2  # the second and third batches were keyed and missed; no other
        assert node._verified.skipped == 0
    finally:
        node.shutdown()

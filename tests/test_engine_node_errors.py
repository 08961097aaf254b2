"""A failure inside the node engine names the batch position and instruction that raised it, as
the reference engine does, whichever path ran it (block operations on one or two threads, a
replayed plan, instruction by instruction), and keeps NumPy's exception type and message."""

from __future__ import annotations

import numpy as np
import pytest

from shoal.bytecode import BaseDecl, Batch, Instruction, View, make_attrs
from shoal.engine import ReferenceEngine
from shoal.engine.node import NodeConfig, NodeEngine

F8, I8 = np.dtype(np.float64), np.dtype(np.int64)
N = 4096


def gather_batch(index: list[int]) -> Batch:
    """``b4 = b1 + b1; b3 = b1[b2]`` over fresh bases: instruction 1 is the gather."""
    source, whole = View(1, F8, 0, (N,), (8,)), View(4, F8, 0, (N,), (8,))
    rows = View(2, I8, 0, (len(index),), (8,))
    return Batch(
        bases=[BaseDecl(1, F8, N), BaseDecl(2, I8, len(index)), BaseDecl(3, F8, len(index)), BaseDecl(4, F8, N)],
        data={1: np.arange(N, dtype=F8), 2: np.array(index, dtype=I8)},
        instructions=[
            Instruction("add", (whole,), (source, source)),
            Instruction("gather", (View(3, F8, 0, (len(index),), (8,)),), (source, rows), make_attrs(key=(("array", 0),))),
        ],
    )


def release_all() -> Batch:
    return Batch(bases=[], data={}, instructions=[Instruction("release", (), (), make_attrs(base=b)) for b in (1, 2, 3, 4)])


def failure(engine, batch: Batch) -> BaseException:
    with pytest.raises(Exception) as caught:
        engine.execute(batch)
    return caught.value


def reference_failure(batch: Batch) -> BaseException:
    engine = ReferenceEngine()
    try:
        return failure(engine, batch)
    finally:
        engine.shutdown()


@pytest.mark.parametrize(("threads", "direct_work"), [(1, 0), (2, 0), (2, 1 << 30)], ids=["one-thread", "pool", "direct"])
def test_a_failing_instruction_is_named_as_the_reference_engine_names_it(threads, direct_work):
    batch = gather_batch([0, 1, N + 5, 2])
    expected = reference_failure(batch)
    engine = NodeEngine(NodeConfig(threads=threads, block_size=512, compile="off", direct_work=direct_work))
    try:
        error = failure(engine, batch)
    finally:
        engine.shutdown()
    assert type(error) is type(expected) is IndexError
    assert str(error) == str(expected)
    assert error.__notes__ == expected.__notes__ == ["in instruction 1: gather b3:f8(4) <- b1:f8(4096), b2:i8(4)"]


def test_a_replayed_plan_names_the_instruction_of_the_batch_that_failed():
    engine = NodeEngine(NodeConfig(threads=2, block_size=512, compile="off", direct_work=0))
    try:
        engine.execute(gather_batch([0, 1, 2, 3]))
        engine.execute(release_all())
        engine.execute(gather_batch([0, 1, 2, 3]))
        assert engine.last_stats.replayed
        engine.execute(release_all())
        error = failure(engine, gather_batch([3, -N - 1, 2, 1]))
    finally:
        engine.shutdown()
    assert isinstance(error, IndexError)
    assert error.__notes__ == ["in instruction 1: gather b3:f8(4) <- b1:f8(4096), b2:i8(4)"]


@pytest.mark.parametrize(("threads", "direct_work"), [(1, 0), (2, 0), (2, 1 << 30)], ids=["one-thread", "pool", "direct"])
def test_what_does_not_read_a_failed_instruction_still_runs(threads, direct_work):
    """Instructions after a failing one that read none of its outputs run on every path (a
    cluster rank may put work recorded before the failing call after it); those that do are
    skipped, and the failure is raised at the end."""
    source, rows = View(1, F8, 0, (N,), (8,)), View(2, I8, 0, (2,), (8,))
    gathered, later, spoiled = View(3, F8, 0, (2,), (8,)), View(4, F8, 0, (N,), (8,)), View(5, F8, 0, (2,), (8,))
    batch = Batch(
        bases=[BaseDecl(1, F8, N), BaseDecl(2, I8, 2), BaseDecl(3, F8, 2), BaseDecl(4, F8, N), BaseDecl(5, F8, 2)],
        data={1: np.arange(N, dtype=F8), 2: np.array([1, N + 5], dtype=I8)},
        instructions=[
            Instruction("gather", (gathered,), (source, rows), make_attrs(key=(("array", 0),))),
            Instruction("add", (later,), (source, source)),
            Instruction("add", (spoiled,), (gathered, gathered)),
        ],
    )
    engine = NodeEngine(NodeConfig(threads=threads, block_size=512, compile="off", direct_work=direct_work))
    try:
        assert isinstance(failure(engine, batch), IndexError)
        np.testing.assert_array_equal(engine.fetch(later), np.arange(N, dtype=F8) * 2)
    finally:
        engine.shutdown()

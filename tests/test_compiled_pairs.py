"""A chunked pair run by the C loop (``shoal/engine/node/run/_pair_rows.c``,
``compiled_pairs.py``): values bit for bit NumPy's two calls, the conditions each call meets
reported for that call, the NumPy chunks where the loop does not apply or was not built."""

from __future__ import annotations

import numpy as np
import pytest
from engine_node_recorder import Recorder, direct_against_reference
from numpy_fixtures import same_values_and_warnings

from shoal.engine.node.run import compiled_pairs

OPERATIONS = (np.add, np.subtract, np.multiply, np.divide)
BITS = {"divide by zero": 1, "overflow": 2, "underflow": 4, "invalid value": 8}


def test_the_loop_was_built():
    assert compiled_pairs.pair_rows is not None, "shoal/engine/node/run/_pair_rows.c was not built (python setup.py build_ext --inplace)"


def _numpy_bits(ufunc, *operands) -> tuple[np.ndarray, int]:
    """``ufunc(*operands)`` and the conditions NumPy's error state reported for it."""
    messages: list[str] = []

    class Log:
        def write(self, text: str) -> None:
            messages.append(text)

    with np.errstate(all="log", call=Log()):
        result = ufunc(*operands)
    bits = 0
    for message in messages:
        for text, bit in BITS.items():
            if text in message:
                bits |= bit
    return result, bits


def _case(rng: np.random.Generator, trial: int):
    rows, columns = int(rng.integers(1, 30)), int(rng.integers(1, 60 if trial % 6 else 9000))
    dtype = np.dtype(np.float64 if trial % 2 else np.float32)
    a = rng.standard_normal((rows, 1) if trial % 3 else (rows, columns)).astype(dtype)
    b = rng.standard_normal((1, columns) if trial % 5 else (rows, columns)).astype(dtype)
    if trial % 7 == 0:  # zeros, infinities and huge values: every condition somewhere
        a.flat[0], b.flat[0] = 0.0, 0.0
        a.flat[-1] = np.inf
        b.flat[-1] = np.finfo(dtype).max
    storage = rng.standard_normal((rows, 2 * columns)).astype(dtype)
    out = storage[:, ::2] if trial % 4 == 0 else storage[:, ::-1][:, :columns]
    return a, b, out, dtype


@pytest.mark.parametrize("seed", range(6))
def test_rows_are_numpys_bit_for_bit_with_numpys_conditions(seed):
    rng = np.random.default_rng(seed)
    for trial in range(60):
        a, b, out, dtype = _case(rng, trial)
        first, second = OPERATIONS[int(rng.integers(0, 4))], OPERATIONS[int(rng.integers(0, 4))]
        temporary_first = bool(rng.integers(0, 2))
        x = out if trial % 3 else rng.standard_normal(out.shape).astype(dtype)  # in place, or not
        temporary, first_bits = _numpy_bits(first, a, b)
        want, second_bits = _numpy_bits(second, *((temporary, x) if temporary_first else (x, temporary)))
        begin = int(rng.integers(0, out.shape[0]))
        end = out.shape[0]
        before = out.copy()
        operands = [np.broadcast_to(value, out.shape) for value in (a, b, x)]
        got = compiled_pairs.pair_rows(OPERATIONS.index(first), OPERATIONS.index(second), temporary_first, out, *operands, begin, end)
        expected = before.copy()
        expected[begin:end] = want[begin:end]
        assert out.tobytes() == expected.tobytes(), (seed, trial, first.__name__, second.__name__)
        if begin == 0:
            assert got == (first_bits, second_bits), (seed, trial, first.__name__, second.__name__)


def test_operands_of_another_type_or_shape_are_refused():
    out = np.zeros((3, 4))
    with pytest.raises(TypeError, match="float64 or float32"):
        compiled_pairs.pair_rows(2, 1, False, out, np.zeros((3, 4), np.float32), out, out, 0, 3)
    with pytest.raises(TypeError, match="output's shape"):
        compiled_pairs.pair_rows(2, 1, False, out, np.zeros((3, 1)), out, out, 0, 3)
    with pytest.raises(ValueError, match="rows out of range"):
        compiled_pairs.pair_rows(2, 1, False, out, out, out, out, 0, 4)
    with pytest.raises(ValueError, match="unknown operation"):
        compiled_pairs.pair_rows(4, 1, False, out, out, out, out, 0, 3)
    with pytest.raises(ValueError):  # read-only output
        compiled_pairs.pair_rows(2, 1, False, np.broadcast_to(out, (3, 4)), out, out, out, 0, 3)


def _outer_update(dtype: str, scaled: bool = False):
    """``a[:, 1:] -= np.outer(column, row)`` (or ``-= 2.5 * b``) on a 1200 x 500 ``a``."""

    def program(rec):
        rng = np.random.default_rng(3)
        a = rec.array(rng.random((1200, 500)).astype(dtype))
        target = rec.index(a, (slice(None), slice(1, None)))
        if scaled:
            temporary = rec.ufunc("multiply", rec.array(rng.random((1200, 499)).astype(dtype)), 2.5)
        else:
            column, row = rec.array(rng.random((1200, 1)).astype(dtype)), rec.array(rng.random((1, 499)).astype(dtype))
            temporary = rec.ufunc("multiply", column, row)
        rec.emit("subtract", (target,), (target, temporary))
        rec.release(temporary)
        return [a]

    return program


@pytest.mark.parametrize(("dtype", "scaled", "compiled"), [("float64", False, True), ("float32", False, True), ("float64", True, True), ("float32", True, False), ("int64", False, False)])
def test_the_engine_takes_the_loop_for_float_pairs_only(monkeypatch, dtype, scaled, compiled):
    """A Python float is a float64 operand as it is; for float32 NumPy would cast it first."""
    calls: list[tuple[int, int]] = []
    loop = compiled_pairs.pair_rows

    def counting(*args):
        calls.append(args[-2:])
        return loop(*args)

    monkeypatch.setattr(compiled_pairs, "pair_rows", counting)
    recorder = Recorder()
    checked = _outer_update(dtype, scaled)(recorder)
    direct_against_reference(recorder.new_batch(), checked)
    assert bool(calls) == compiled
    if compiled:  # two threads, each its share of the 1200 rows
        assert sorted(calls) == [(0, 600), (600, 1200)]


def test_without_the_loop_the_numpy_chunks_give_the_same(monkeypatch):
    monkeypatch.setattr(compiled_pairs, "pair_rows", None)
    recorder = Recorder()
    checked = _outer_update("float64")(recorder)
    direct_against_reference(recorder.new_batch(), checked)


@pytest.mark.parametrize("where", ["multiply", "subtract", "both"])
def test_a_condition_is_reported_for_the_call_that_met_it_at_numpys_line(monkeypatch, where):
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    monkeypatch.setenv("SHOAL_DIRECT_WORK", str(1 << 40))

    def program(np_):
        # overflow in the multiply; overflow in the subtraction; overflow then inf - inf
        big, a = {"multiply": (1e200, 1.0), "subtract": (1e154, -1e308), "both": (1e200, np_.inf)}[where]
        a = np_.ones((600, 300)) * a
        column, row = np_.ones(600) * big, np_.linspace(1.0, 2.0, 300) * big
        for _ in range(2):
            a -= column[:, None] * row  # np.outer's NumPy warns inside numeric.py
        return a

    same_values_and_warnings(program, engine="node", eager_threshold=0, settled_threshold=0)


def test_info_says_which_runs(monkeypatch):
    from shoal import info

    assert info.chunked_pairs().startswith("compiled loop")
    monkeypatch.setattr(compiled_pairs, "pair_rows", None)
    assert info.chunked_pairs().startswith("NumPy chunks")


def _large_update(read_later: bool = False, into_new: bool = False):
    """A 2100 x 2100 outer product subtracted from an array with data (8.8 M element operations
    the pair, over the default direct-work bound), the temporary still held at the batch's end."""
    recorder = Recorder()
    rng = np.random.default_rng(5)
    a = recorder.array(rng.random((2100, 2100)))
    column, row = recorder.array(rng.random((2100, 1))), recorder.array(rng.random((1, 2100)))
    outer = recorder.ufunc("multiply", column, row)
    out = recorder.empty((2100, 2100), "float64") if into_new else a
    recorder.emit("subtract", (out,), (a, outer))
    checked = [out]
    if read_later:
        checked.append(recorder.ufunc("add", outer, 1.0))
    return recorder.new_batch(), checked


@pytest.mark.parametrize(("case", "counted"), [("in place", True), ("read later", False), ("into a new base", False), ("without the loop", False)])
def test_a_batch_of_a_large_pair_the_loop_takes_runs_direct(monkeypatch, case, counted):
    from shoal.engine import ReferenceEngine
    from shoal.engine.node import NodeConfig, NodeEngine
    from shoal.engine.node.run.chunked_pairs import pair_work

    if case == "without the loop":
        monkeypatch.setattr(compiled_pairs, "pair_rows", None)
    batch, checked = _large_update(read_later=case == "read later", into_new=case == "into a new base")
    assert pair_work(batch) == (2 * 2100 * 2100 if counted else 0)
    node, reference = NodeEngine(NodeConfig(threads=2, compile="off")), ReferenceEngine()
    try:
        reference.execute(batch)
        node.execute(batch)
        assert node.last_stats.direct == counted
        for view in checked:
            assert node.fetch(view).tobytes() == reference.fetch(view).tobytes()
    finally:
        node.shutdown()
        reference.shutdown()

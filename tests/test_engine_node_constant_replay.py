"""Replaying a plan whose constants changed: a loop whose scalar differs every iteration keeps the
batch structure, so the node engine replays its plan, and every block operation must compute
with the new batch's constants. Each loop runs on the node engine with the plan cache, on one
without it and on the reference engine; later iterations must replay (``last_stats.replayed``)
and match both, and a constant whose kind decides dtypes or planning must not replay."""

from __future__ import annotations

import numpy as np
import pytest
from engine_node_harness import CachedAndFresh, assert_same

from shoal.bytecode import View

RNG = np.random.default_rng(11)


class Loop(CachedAndFresh):
    """Three engines fed the same batches: node (cached), node (never cached), reference."""

    def __init__(self, compile: str = "off", block: int = 64, threads: int = 2, direct_work: int = 0) -> None:
        super().__init__(threads, block, compile, direct_work)

    def run(self, *views: View, exact: bool = True) -> bool:  # type: ignore[override]
        """Run the recorded batch everywhere, compare ``views``; True if the node engine replayed."""
        replayed = super().run()
        self.check(*views, exact=exact)
        return replayed


@pytest.fixture
def loop():
    engines = Loop()
    yield engines
    engines.close()


def sample(dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    if dtype.kind == "c":
        return (RNG.standard_normal(shape) + 1j * RNG.standard_normal(shape)).astype(dtype)
    if dtype.kind in "iu":
        return RNG.integers(0, 50, shape).astype(dtype)
    if dtype.kind == "b":
        return RNG.random(shape) < 0.5
    return RNG.standard_normal(shape).astype(dtype)


KINDS = {  # array dtype, the loop's constants (each kind stays one kind: the batches replay)
    "float": (np.float64, [0.5, -1.25, 3.0, -0.0, 7.5]),
    "int": (np.int32, [3, 7, 100, 42, 0]),
    "bool": (np.bool_, [True, False, True, False, True]),
    "complex": (np.complex128, [1 + 2j, -0.5j, 3 + 0j, -1.5 + 0.25j, 2j]),
    "float32 scalar": (np.float32, [np.float32(0.1), np.float32(-2.5), np.float32(1e3), np.float32(0.3), np.float32(-7)]),
    "float64 scalar": (np.float32, [np.float64(0.1), np.float64(-2.5), np.float64(1e3), np.float64(0.3), np.float64(-7)]),
    "int16 scalar": (np.int16, [np.int16(3), np.int16(-300), np.int16(12), np.int16(-1), np.int16(9)]),
    "uint8 scalar": (np.uint8, [np.uint8(3), np.uint8(200), np.uint8(1), np.uint8(0), np.uint8(77)]),
    "complex64 scalar": (np.complex64, [np.complex64(1 - 2j), np.complex64(0.5j), np.complex64(3), np.complex64(-1), np.complex64(2 + 2j)]),
}


@pytest.mark.parametrize("kind", list(KINDS))
def test_fused_groups_with_a_new_constant_each_iteration_replay_on_the_tile_path(loop, kind):
    dtype, constants = KINDS[kind]
    rec = loop.recorder
    replays = []
    for value in constants:
        x = rec.array(sample(np.dtype(dtype), (40, 30)))
        y = rec.ufunc("add", rec.ufunc("multiply", x, value), value) if dtype is not np.bool_ else rec.ufunc("logical_xor", x, value)
        z = rec.ufunc("not_equal", y, value)
        total = rec.reduce("sum", y)
        rec.release(x)
        replays.append(loop.run(y, z, total, exact=True))
        rec.release(y, z, total)
    assert replays == [False, False, True, True, True]  # the second releases the first's results


def test_where_clip_and_in_place_updates_read_the_new_constants(loop):
    rec = loop.recorder
    state = rec.array(RNG.standard_normal((50, 20)))
    loop.run(state)
    replays = []
    for step, (low, high, scale) in enumerate([(-0.5, 0.5, 1.5), (-1.0, 0.25, 0.5), (0.0, 2.0, -1.0), (-0.1, 0.1, 3.0)]):
        other = step * 10 + 0.7  # no two constants of a batch equal (that pattern is keyed)
        clipped = rec.ufunc("minimum", rec.ufunc("maximum", state, low), high)
        chosen = rec.where(rec.ufunc("greater", state, low), clipped, other)
        rec.emit("multiply", (state,), (state, scale))  # in place
        rec.emit("add", (state,), (state, chosen))
        mean = rec.reduce("mean", chosen)
        rec.release(clipped, chosen)
        replays.append(loop.run(state, mean, exact=False))
        rec.release(mean)
    assert replays == [False, False, True, True]  # the second releases the first's results


def test_whole_view_operations_and_fills_read_the_new_constants():
    """A small lone instruction runs as one whole-view operation (``_run_whole``), a fill too."""
    engines = Loop(direct_work=6400)
    try:
        rec = engines.recorder
        replays = []
        for value in (2.0, -3.5, 0.25):
            big = rec.array(RNG.standard_normal(40000))
            doubled = rec.ufunc("multiply", rec.ufunc("add", big, 1.0), 2.0)
            small = rec.array(RNG.standard_normal(10))
            shifted = rec.ufunc("subtract", small, value)
            filled = rec.empty((7,), np.float64)
            rec.fill(filled, value)
            rec.release(big, small)
            replays.append(engines.run(doubled, shifted, filled))
            assert engines.node.last_stats.whole_ops > 0
            rec.release(doubled, shifted, filled)
        assert replays == [False, False, True]
    finally:
        engines.close()


def test_axis_reductions_and_copies_into_slices_read_the_new_constants(loop):
    rec = loop.recorder
    replays = []
    for value in (1.5, -2.0, 0.125):
        x = rec.array(RNG.standard_normal((30, 40)))
        scaled = rec.ufunc("multiply", x, value)
        columns = rec.reduce("sum", scaled, axis=0)
        target = rec.array(np.zeros((30, 40)))
        rec.copy(rec.index(target, (slice(0, 15), slice(None))), value)
        rec.copy(rec.index(target, (slice(15, None), slice(None))), rec.index(scaled, (slice(15, None), slice(None))))
        rec.release(x)
        replays.append(loop.run(scaled, columns, target, exact=False))
        rec.release(scaled, columns, target)
    assert replays == [False, False, True]


def test_constants_equal_in_one_batch_and_different_in_the_next_do_not_replay(loop):
    """Which constants are equal is part of the key (identical sweeps fuse only when equal)."""
    rec = loop.recorder
    replays = []
    for first, second in ((0.5, 0.5), (0.25, 0.75), (0.75, 0.75), (2.0, 3.0), (1.0, 1.0)):
        x = rec.array(RNG.standard_normal(500))
        y = rec.ufunc("add", rec.ufunc("multiply", x, first), second)
        rec.release(x)
        replays.append(loop.run(y))
        rec.release(y)
    assert replays == [False, False, False, True, True]  # the second releases the first's result


def test_a_constant_of_another_kind_does_not_replay_a_plan_of_other_dtypes(loop):
    """``float32 * 0.1`` computes in float32, ``float32 * float64(0.1)`` in float64: the same
    views and opcodes, so only the constant's kind tells the plans apart."""
    rec = loop.recorder
    values = RNG.standard_normal(3000).astype(np.float32) * 1000
    results = []
    replays = []
    for value in (0.1, np.float64(0.1), 0.1, np.float64(0.1), 0.1):
        x = rec.array(values)
        out = rec.empty((3000,), np.float32)
        rec.emit("multiply", (out,), (x, value))
        rec.release(x)
        replays.append(loop.run(out))
        results.append(loop.node.fetch(out))
        rec.release(out)
    assert replays == [False, False, False, True, True]  # the second releases the first's result
    assert (results[0] != results[1]).any()  # the two kinds do give different results here
    assert_same(results[2], results[0], exact=True)
    assert_same(results[3], results[1], exact=True)
    assert_same(results[4], results[0], exact=True)


def test_a_weak_integer_out_of_a_dtype_range_does_not_replay(loop):
    rec = loop.recorder
    replays = []
    for value in (3, 100, 300, 5, 299):
        x = rec.array(np.arange(400, dtype=np.int16))
        y = rec.ufunc("add", x, value)
        rec.release(x)
        replays.append(loop.run(y))
        rec.release(y)
    assert replays == [False, False, False, True, True]  # 300 fits no int8: another key


@pytest.mark.full
def test_compiled_kernels_replay_with_new_constants(tmp_path, monkeypatch):
    pytest.importorskip("numba")
    monkeypatch.setenv("SHOAL_CACHE_DIR", str(tmp_path))
    engines = Loop(compile="sync", block=256)
    try:
        rec = engines.recorder
        replays = []
        compiled = []
        for value, flag, scalar in ((0.5, True, np.float32(2)), (-1.5, False, np.float32(-0.5)), (3.25, True, np.float32(7))):
            x = rec.array(RNG.standard_normal((64, 48)))
            y = rec.ufunc("multiply", rec.ufunc("add", x, value), scalar)
            z = rec.where(rec.ufunc("greater", y, value), y, -value)
            w = rec.ufunc("logical_and", rec.ufunc("less", z, 1.0), flag)
            total = rec.reduce("sum", z)
            rec.release(x)
            replays.append(engines.run(y, z, w, total, exact=False))
            compiled.append(engines.node.last_stats.compiled_block_ops)
            rec.release(y, z, w, total)
        assert replays == [False, False, True]
        assert all(count > 0 for count in compiled)
    finally:
        engines.close()


@pytest.mark.full
def test_fused_sweeps_replay_with_new_constants(tmp_path, monkeypatch):
    """Identical in-place stencil sweeps run several per pass once compiled; their constant
    changes from batch to batch (and is the same within one, or they would not fuse)."""
    pytest.importorskip("numba")
    monkeypatch.setenv("SHOAL_CACHE_DIR", str(tmp_path))
    engines = Loop(compile="sync", block=256)
    try:
        rec = engines.recorder
        a = rec.array(RNG.random((36, 24)))
        engines.run(a)
        inner = (slice(1, -1), slice(1, -1))
        shifted = [(slice(0, -2), slice(1, -1)), (slice(2, None), slice(1, -1)), (slice(1, -1), slice(0, -2)), (slice(1, -1), slice(2, None))]
        replays = []
        passes = []
        for weight in (0.2, 0.15, 0.25, 0.1, 0.3):
            for _ in range(4):
                total = rec.ufunc("multiply", rec.index(a, inner), weight)
                partials = [total]
                for key in shifted:
                    total = rec.ufunc("add", total, rec.index(a, key))
                    partials.append(total)
                smoothed = rec.ufunc("multiply", total, 0.2)
                rec.copy(rec.index(a, inner), smoothed)
                rec.release(*partials, smoothed)
            replays.append(engines.run(a, exact=False))
            passes.append(engines.node.last_stats.sweep_passes)
        assert passes[-1] > 0 and replays[-1] and replays[-2]
    finally:
        engines.close()

"""The node engine against the reference engine, with block sizes small enough to hit every path.

Block sizes of 1, 7 and 16 elements make aligned, non-aligned and partial edge blocks, view-blocks
that straddle base-blocks, and many block operations per instruction. With compilation off every
kernel runs on the NumPy tile path, which must match the reference bit for bit.
"""

from __future__ import annotations

import engine_node_harness
import numpy as np
import pytest
from engine_node_harness import STACKED, run_both
from engine_node_recorder import Recorder

from shoal.bytecode import View
from shoal.bytecode.opcodes import UFUNC_NAMES, spec

BLOCKS = [1, 7, 16, 4096]
RNG = np.random.default_rng(42)


@pytest.fixture(autouse=True, params=["plain", STACKED])
def stack(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test runs on the engines themselves and again below the pass-through component."""
    monkeypatch.setattr(engine_node_harness, "stack", request.param)
    return request.param


def five_point_sweep(rec: Recorder, grid: View, target: View) -> None:
    """``target[1:-1, 1:-1] = 0.2 * (grid[1:-1, 1:-1] + its four neighbours)``, temporaries released."""
    s = lambda r, c: rec.index(grid, (r, c))  # noqa: E731
    inner, up, down = slice(1, -1), slice(None, -2), slice(2, None)
    t1 = rec.ufunc("add", s(inner, inner), s(up, inner))
    t2 = rec.ufunc("add", t1, s(down, inner))
    t3 = rec.ufunc("add", t2, s(inner, up))
    t4 = rec.ufunc("add", t3, s(inner, down))
    t5 = rec.ufunc("multiply", 0.2, t4)
    rec.release(t1, t2, t3, t4)
    rec.copy(rec.index(target, (inner, inner)), t5)
    rec.release(t5)


def jacobi(iterations: int, shape=(13, 11)):
    def program(rec: Recorder):
        grid = rec.array(RNG.random(shape))
        new = rec.array(np.zeros(shape))
        for _ in range(iterations):
            five_point_sweep(rec, grid, new)
            grid, new = new, grid
        return [grid, new]

    return program


@pytest.mark.parametrize("block", BLOCKS)
@pytest.mark.parametrize("threads", [1, 2])
def test_jacobi_stencil(block, threads):
    run_both(jacobi(3), block=block, threads=threads)


@pytest.mark.parametrize("block", BLOCKS)
def test_heat_equation_updates_in_place_through_views(block):
    def program(rec):
        u = rec.array(RNG.random(50))
        for _ in range(4):
            a = rec.ufunc("multiply", 2.0, rec.index(u, slice(1, -1)))
            b = rec.ufunc("subtract", rec.index(u, slice(2, None)), a)
            c = rec.ufunc("add", b, rec.index(u, slice(None, -2)))
            d = rec.ufunc("multiply", c, 0.1)
            rec.emit("add", (rec.index(u, slice(1, -1)),), (rec.index(u, slice(1, -1)), d))
            rec.release(a, b, c, d)
        return [u]

    run_both(program, block=block)


@pytest.mark.parametrize("block", BLOCKS)
def test_overlapping_in_place_update_sees_the_old_values(block):
    def program(rec):
        a = rec.array(np.arange(40.0))
        rec.emit("add", (rec.index(a, slice(1, None)),), (rec.index(a, slice(1, None)), rec.index(a, slice(None, -1))))
        b = rec.array(np.arange(36).reshape(6, 6))
        rec.emit("multiply", (b,), (rec.transpose(b), 2))
        return [a, b]

    run_both(program, block=block)


@pytest.mark.parametrize("block", BLOCKS)
def test_views_of_views_transposes_and_negative_strides(block):
    def program(rec):
        a = rec.array(RNG.random((9, 12)))
        v = rec.index(rec.index(a, (slice(None, None, 2), slice(1, None))), (slice(1, None), slice(None, None, -1)))
        out = rec.empty(v.shape, np.float64)
        rec.emit("add", (out,), (v, rec.index(a, (slice(0, 4), slice(0, 11)))))
        t = rec.ufunc("multiply", rec.transpose(a), 3.0)
        rec.emit("subtract", (rec.index(a, (slice(None), slice(None, None, -1))),), (rec.index(a, (slice(None), slice(None, None, -1))), 1.0))
        return [out, t, a]

    run_both(program, block=block)


@pytest.mark.parametrize("block", BLOCKS)
def test_broadcasting_rows_columns_and_zero_dimensional_views(block):
    def program(rec):
        m = rec.array(RNG.random((8, 10)))
        row = rec.array(RNG.random(10))
        col = rec.array(RNG.random((8, 1)))
        scalar = rec.array(np.float64(2.5))
        a = rec.ufunc("add", m, row)
        b = rec.ufunc("multiply", a, col)
        c = rec.ufunc("divide", b, scalar)
        d = rec.ufunc("maximum", row, col)
        return [a, b, c, d]

    run_both(program, block=block)


UNARY = [n for n in UFUNC_NAMES if spec(n).ufunc.nin == 1]
BINARY = [n for n in UFUNC_NAMES if spec(n).ufunc.nin == 2]
DTYPES = ["float64", "float32", "int64", "int32", "uint8", "int8", "bool", "complex128"]


def sample(dtype: np.dtype, n: int) -> np.ndarray:
    if dtype.kind == "b":
        return RNG.random(n) < 0.5
    if dtype.kind in "iu":
        low = 0 if dtype.kind == "u" else -5
        return RNG.integers(low, 6, n).astype(dtype)
    values = RNG.normal(size=n) * 3
    values[:4] = [0.0, np.nan, np.inf, -0.5]
    if dtype.kind == "c":
        values = values + 1j * RNG.normal(size=n)
    return values.astype(dtype)


def supported(name: str, *probes) -> bool:
    try:
        with np.errstate(all="ignore"):
            spec(name).ufunc(*probes)
    except (TypeError, ValueError):
        return False
    return True


@pytest.mark.parametrize("dtype", DTYPES)
def test_every_element_wise_ufunc_in_one_batch(dtype):
    dtype = np.dtype(dtype)

    def program(rec):
        x_values, y_values = sample(dtype, 37), sample(dtype, 37)
        if dtype.kind in "iu":
            y_values = np.where(y_values == 0, 1, y_values).astype(dtype)  # keep power/shift well-defined
            y_values = np.clip(y_values, 0 if dtype.kind == "u" else -3, 3).astype(dtype)
        x, y = rec.array(x_values), rec.array(y_values)
        kept = []
        for name in UNARY:
            if supported(name, x_values):
                kept += list(np.atleast_1d(rec.ufunc(name, x)))
        for name in BINARY:
            if name in ("power", "left_shift", "right_shift", "ldexp") and dtype.kind in "iu":
                if not supported(name, x_values, np.abs(y_values)):
                    continue
                y_abs = rec.ufunc("absolute", y)
                kept += list(np.atleast_1d(rec.ufunc(name, x, y_abs)))
                continue
            if supported(name, x_values, y_values):
                kept += list(np.atleast_1d(rec.ufunc(name, x, y)))
        if supported("clip", x_values, y_values, y_values):
            kept.append(rec.ufunc("clip", x, y, rec.index(y, slice(None, None, -1))))
        return kept

    run_both(program, block=7)


@pytest.mark.parametrize("block", [3, 64])
def test_weak_python_scalars_and_strong_numpy_scalars(block):
    def program(rec):
        f4 = rec.array(RNG.random(30).astype(np.float32))
        i1 = rec.array(RNG.integers(-100, 100, 30).astype(np.int8))
        u1 = rec.array(RNG.integers(0, 255, 30).astype(np.uint8))
        return [
            rec.ufunc("multiply", f4, 2.5),
            rec.ufunc("add", i1, 100),
            rec.ufunc("subtract", u1, np.uint8(200)),
            rec.ufunc("add", f4, np.float64(1.5)),
            rec.ufunc("multiply", i1, 3.5),
            rec.ufunc("divide", u1, 7),
            rec.ufunc("greater", f4, 0.5),
            rec.ufunc("add", i1, True),
        ]

    run_both(program, block=block)


@pytest.mark.parametrize("block", BLOCKS)
def test_where_fill_and_casting_copies(block):
    def program(rec):
        a = rec.array(RNG.normal(size=(7, 9)))
        mask = rec.ufunc("greater", a, 0.0)
        w1 = rec.where(mask, a, 0.0)
        w2 = rec.where(mask, 1, rec.array(np.arange(9, dtype=np.int16)))
        target = rec.empty((7, 9), np.int32)
        rec.copy(target, a)
        flags = rec.empty((5, 4), np.bool_)
        rec.fill(flags, True)
        rec.fill(rec.index(flags, (slice(None), 1)), False)
        halves = rec.empty((7, 9), np.float32)
        rec.fill(halves, 0.5)
        rec.copy(rec.index(halves, (slice(1, None, 2),)), rec.index(a, 0))
        return [w1, w2, target, flags, halves]

    run_both(program, block=block)


REDUCTIONS = ["sum", "prod", "min", "max", "any", "all", "mean"]


@pytest.mark.parametrize("op", REDUCTIONS)
@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "uint8", "bool"])
@pytest.mark.parametrize("block", [5, 64])
def test_fused_full_reductions(op, dtype, block):
    dtype = np.dtype(dtype)

    def program(rec):
        values = sample(dtype, 120).reshape(10, 12)
        if dtype.kind == "f":
            values[np.isnan(values) | np.isinf(values)] = 0.5
            values = (values / 4).astype(dtype)
        a = rec.array(values)
        shifted = rec.index(a, (slice(1, None), slice(None, -1)))
        t = rec.ufunc("multiply", shifted, rec.index(a, (slice(None, -1), slice(1, None)))) if dtype.kind != "b" else rec.ufunc("logical_and", shifted, shifted)
        result = rec.reduce(op, t)
        kept = rec.reduce(op, a, keepdims=True)
        rec.release(t)
        return [result, kept]

    run_both(program, block=block, exact=False)


def test_reduction_propagates_nan_and_respects_dtype():
    def program(rec):
        values = RNG.random(100)
        values[57] = np.nan
        a = rec.array(values)
        b = rec.array(RNG.integers(0, 100, 100).astype(np.int8))
        return [rec.reduce("min", a), rec.reduce("max", a), rec.reduce("sum", b, dtype=np.int8), rec.reduce("sum", b), rec.reduce("mean", b)]

    run_both(program, block=8, exact=False)


@pytest.mark.parametrize("block", [4, 64])
def test_operations_that_run_whole(block):
    def program(rec):
        a = rec.array(RNG.random((6, 8)))
        m = rec.array(RNG.random((8, 5)))
        idx = rec.array(np.array([5, 0, 3, 3]))
        kept = [rec.reduce("sum", a, axis=0), rec.reduce("max", a, axis=1, keepdims=True), rec.reduce("var", a, axis=1), rec.reduce("argmax", a)]
        for op, attrs in [("cumsum", {"axis": 1}), ("cumprod", {"axis": None})]:
            out = rec.empty((6, 8) if attrs["axis"] is not None else (48,), np.float64)
            rec.emit(op, (out,), (a,), **attrs)
            kept.append(out)
        product = rec.empty((6, 5), np.float64)
        rec.emit("matmul", (product,), (a, m))
        dotted = rec.empty((6, 5), np.float64)
        rec.emit("dot", (dotted,), (a, m))
        ramp = rec.empty((10,), np.float64)
        rec.emit("arange", (ramp,), (), start=1, stop=11, step=1)
        space = rec.empty((7,), np.float32)
        rec.emit("linspace", (space,), (), start=0.0, stop=1.0, num=7, endpoint=True)
        eye = rec.empty((4, 5), np.int64)
        rec.emit("eye", (eye,), (), k=1)
        gathered = rec.empty((4, 8), np.float64)
        rec.emit("gather", (gathered,), (a, idx), key=(("array", 0), ("slice", None, None, None)))
        rec.emit("scatter", (a,), (-1.0, idx), key=(("array", 0),))
        after = rec.ufunc("add", a, 1.0)
        return [*kept, product, dotted, ramp, space, eye, gathered, a, after]

    run_both(program, block=block, exact=False)


def test_bases_live_across_batches_and_releases_free_them():
    state = {}

    def program(rec):
        if "a" not in state:
            state["a"] = rec.array(RNG.random((20, 20)))
            state["b"] = rec.empty((20, 20), np.float64)
            rec.fill(state["b"], 0.0)
            return [state["a"], state["b"]]
        a, b = state["a"], state["b"]
        t = rec.ufunc("sqrt", a)
        rec.emit("add", (b,), (b, t))
        scratch = rec.ufunc("sin", b)
        rec.release(t)
        out = rec.ufunc("multiply", scratch, 2)
        rec.release(scratch)
        return [a, b, out]

    run_both(program, block=16, batches=3)


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
def test_matrix_products_as_row_panels(dtype):
    def program(rec):
        a = rec.array((RNG.random((150, 40)) * 10).astype(dtype))
        b = rec.array((RNG.random((40, 30)) * 10).astype(dtype))
        at = rec.transpose(rec.array((RNG.random((40, 150)) * 10).astype(dtype)))
        outs = []
        for left, op in ((a, "matmul"), (at, "dot")):
            out = rec.empty((150, 30), dtype)
            rec.emit(op, (out,), (left, b))
            outs.append(out)
        wide = rec.empty((150, 30), np.float64)
        rec.emit("matmul", (wide,), (a, b))
        after = rec.ufunc("add", outs[0], 1)
        # float32 products written to float64 hold float32 rounding, which panels and one BLAS
        # call place differently: beyond float64's tolerance, so only the other dtypes check it
        return [*outs, after] if dtype == "float32" else [*outs, wide, after]

    engine = run_both(program, block=64, exact=False)
    assert engine.last_stats.product_panels == 3 * 3  # three products of 150 rows, 64-row panels


@pytest.mark.parametrize("threads", [1, 2])
def test_reductions_and_scans_along_axes_run_as_slabs(threads):
    def program(rec):
        f = rec.array(RNG.random((9, 40, 30)))
        i = rec.array(RNG.integers(-50, 50, (40, 30)).astype(np.int32))
        return [
            rec.reduce("sum", f, axis=0),
            rec.reduce("max", f, axis=(0, 2), keepdims=True),
            rec.reduce("mean", i, axis=1),
            rec.reduce("argmin", f, axis=2),
            rec.reduce("var", f, axis=0),
            rec.reduce("prod", i, axis=-1, keepdims=True),
            _scan(rec, f, "cumsum", 1),
            _scan(rec, i, "cumprod", 0),
        ]

    engine = run_both(program, block=64, threads=threads, exact=False)
    assert (engine.last_stats.axis_panels > 0) == (threads > 1)


def _scan(rec, source, op, axis):
    out = rec.empty(source.shape, source.dtype)
    rec.emit(op, (out,), (source,), axis=axis)
    return out


@pytest.mark.parametrize("block", BLOCKS)
def test_where_on_tiles_writes_selected_values_exactly(block):
    def program(rec):
        a = rec.array(RNG.normal(size=(7, 9)))
        b = rec.array(RNG.normal(size=(7, 9)).astype(np.float32))
        mask = rec.ufunc("less", a, 0.0)
        scaled = rec.ufunc("multiply", a, 3.0)
        same = rec.where(mask, scaled, a)  # into a new base: no temporary
        narrowed = rec.empty((7, 9), np.float32)
        rec.emit("where", (narrowed,), (mask, scaled, b))  # float64 selected, stored as float32
        into_operand = rec.where(mask, 1.0, scaled)
        return [same, narrowed, into_operand]

    run_both(program, block=block)

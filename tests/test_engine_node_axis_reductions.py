"""Reductions along axes fused into kernels: against the reference engine, and how they fuse."""

from __future__ import annotations

import numpy as np
import pytest
from engine_node_harness import run_both
from engine_node_recorder import Recorder
from test_engine_node_differential import sample

from shoal.engine.blocks.geometry import partition
from shoal.engine.node.plan.plan import Group, plan_batch

RNG = np.random.default_rng(11)
OPS = ["sum", "mean", "prod", "min", "max", "any", "all"]
DTYPES = ["float64", "float32", "int16", "uint8", "bool", "complex128"]


def supported(op: str, dtype: np.dtype) -> bool:
    """False for min and max of complex values, which stay unfused (NumPy orders them)."""
    return not (op in ("min", "max") and dtype.kind == "c")


def values(dtype: np.dtype, shape: tuple[int, ...], op: str) -> np.ndarray:
    data = sample(dtype, int(np.prod(shape))).reshape(shape)
    if op == "prod" and dtype.kind in "fc":
        with np.errstate(invalid="ignore"):
            data = (np.abs(data) % 2 + 0.5).astype(dtype)  # no overflow to inf over a few factors
    return data


def fused_groups(rec: Recorder) -> list[Group]:
    return [step for step in plan_batch(rec.batch, rec.known).steps if isinstance(step, Group)]


def element_wise_then(op: str, dtype: np.dtype, shape: tuple[int, ...], aligned: bool, **attrs):
    """``op(x * y, **attrs)`` over a view that is the whole base or a slice of a larger one."""

    def program(rec: Recorder):
        if aligned:
            x = rec.array(values(dtype, shape, op))
        else:
            padded = rec.array(values(dtype, tuple(n + 3 for n in shape), op))
            x = rec.index(padded, tuple(slice(2, 2 + n) for n in shape))
        factor = rec.array(np.arange(1, shape[0] + 1, dtype=np.int8).reshape(shape[0], *([1] * (len(shape) - 1))) % 3)
        product = rec.ufunc("multiply", x, factor) if dtype != np.bool_ else rec.ufunc("logical_and", x, factor)
        result = rec.reduce(op, product, **attrs)
        rec.release(product)
        return [result]

    return program


@pytest.mark.parametrize(("op", "dtype"), [(op, dtype) for op in OPS for dtype in DTYPES if supported(op, np.dtype(dtype))])
@pytest.mark.parametrize("aligned", [True, False])
def test_axis_reductions_after_element_wise_steps_match_the_reference(op, dtype, aligned):
    dtype = np.dtype(dtype)
    program = element_wise_then(op, dtype, (5, 6, 70), aligned, axis=0)
    # block 7: one view-block per row of the first kept axis, each adding up 5 rows of 70
    stats = run_both(program, block=7, exact=False).last_stats
    assert stats.kernels == 1 and stats.temporaries == 1 and stats.whole_ops == 0


@pytest.mark.parametrize(
    ("shape", "attrs"),
    [
        ((4, 6, 70), {"axis": 0, "keepdims": True}),
        ((4, 6, 70), {"axis": -3}),
        ((3, 4, 5, 66), {"axis": (0, 2)}),
        ((3, 4, 5, 66), {"axis": (-2, 0), "keepdims": True}),
        ((6, 3, 2, 64), {"axis": 1}),
        ((2, 9, 80), {"axis": 1}),
    ],
)
@pytest.mark.parametrize("block", [7, 300, 1 << 16])
def test_axes_keepdims_and_block_sizes(shape, attrs, block):
    def program(rec: Recorder):
        x = rec.array(values(np.dtype(np.float64), shape, "sum"))
        squared = rec.ufunc("square", x)
        kept = [rec.reduce("sum", squared, **attrs), rec.reduce("mean", x, **attrs), rec.reduce("max", squared, **attrs)]
        rec.release(squared)
        return kept

    stats = run_both(program, block=block, exact=False).last_stats
    assert stats.kernels == 1 and stats.whole_ops == 0 and stats.axis_panels == 0


@pytest.mark.parametrize(("source", "attrs"), [
    ("int8", {"dtype": np.int8}),  # wraps in int8, as NumPy's sum does
    ("int8", {}),  # int8 sums in int64
    ("bool", {}),  # counts
    ("float64", {"dtype": np.float32}),  # each element cast to float32 before it is added
    ("float32", {}),
    ("int32", {"op": "mean"}),  # an integer mean adds and divides in float64
    ("float32", {"op": "mean"}),  # a float32 mean divides in float64 and rounds
    ("complex64", {"op": "mean"}),
])  # fmt: skip
def test_accumulator_dtypes_follow_numpy(source, attrs):
    attrs = dict(attrs)
    op = attrs.pop("op", "sum")
    dtype = np.dtype(source)

    def program(rec: Recorder):
        data = sample(dtype, 7 * 5 * 64).reshape(7, 5, 64)
        if dtype.kind == "i":
            data = (data * 31).astype(dtype)  # int8 sums wrap
        x = rec.array(data)
        return [rec.reduce(op, x, axis=0, **attrs), rec.reduce(op, rec.ufunc("negative", x) if dtype != np.bool_ else x, axis=0, **attrs)]

    run_both(program, block=64, exact=False)


def test_an_outer_axis_sum_adds_in_numpys_order():
    """NumPy adds rows one after another from zero; the NumPy tile path does the same, so the
    result is bit-equal (a pairwise or per-block order would round differently)."""

    def program(rec: Recorder):
        x = rec.array(RNG.normal(size=(33, 4, 128)) * 10.0 ** RNG.integers(-8, 8, (33, 4, 128)))
        return [rec.reduce("sum", rec.ufunc("multiply", x, 3.0), axis=0), rec.reduce("sum", x, axis=(0, 1))]

    run_both(program, block=100, exact=True)


def test_view_blocks_never_split_the_reduced_axes():
    split = partition((4, 9, 100), 50, deepest=0)  # axis 1 is reduced
    assert split.axis == 0 and [split.block_shape(i) for i in range(len(split))] == [(1, 9, 100)] * 4
    whole = partition((9, 100), 50, deepest=-1)  # the reduced axis comes first: one view-block
    assert len(whole) == 1 and whole.block_shape(0) == (9, 100)
    assert partition((4, 9, 100), 50).axis == 2  # unconstrained, it splits the rows


def lattice_macroscopic(rec: Recorder, populations):
    """lattice_boltzmann.py's ``macroscopic``: density and velocity from one (9, ny, nx) array."""
    velocity_x = rec.array(np.array([0, 1, 0, -1, 0, 1, -1, -1, 1]).reshape(9, 1, 1))
    velocity_y = rec.array(np.array([0, 0, 1, 0, -1, 1, 1, -1, -1]).reshape(9, 1, 1))
    density = rec.reduce("sum", populations, axis=0)
    flow_x = rec.ufunc("multiply", populations, velocity_x)
    sum_x = rec.reduce("sum", flow_x, axis=0)
    rec.release(flow_x)
    ux = rec.ufunc("divide", sum_x, density)
    rec.release(sum_x)
    flow_y = rec.ufunc("multiply", populations, velocity_y)
    sum_y = rec.reduce("sum", flow_y, axis=0)
    rec.release(flow_y)
    uy = rec.ufunc("divide", sum_y, density)
    rec.release(sum_y)
    return density, ux, uy


def test_lattice_boltzmann_macroscopic_is_two_kernels():
    """Three sums read the populations once; both divisions wait for them and fuse together."""

    def program(rec: Recorder):
        populations = rec.array(RNG.random((9, 16, 96)))
        return list(lattice_macroscopic(rec, populations))

    stats = run_both(program, block=1000, exact=True, batches=3).last_stats
    assert stats.replayed  # the third batch runs the first one's plan
    assert stats.kernels == 2 and stats.fused_instructions == 7
    assert stats.temporaries == 2  # both products are never allocated
    assert stats.whole_ops == 0 and stats.axis_panels == 0


def test_reading_an_axis_reduction_result_over_the_groups_shape_starts_a_new_kernel():
    def program(rec: Recorder):
        x = rec.array(np.linspace(0, 1, 4 * 8 * 80).reshape(4, 8, 80))
        total = rec.reduce("sum", x, axis=0)
        scaled = rec.ufunc("multiply", x, total)  # postponed behind the group, planned again
        return [total, scaled]

    rec = Recorder()
    program(rec)
    assert [[i.op for i in g.instructions] for g in fused_groups(rec)] == [["sum"], ["multiply"]]
    assert run_both(program, block=7, exact=True).last_stats.kernels == 2


@pytest.mark.parametrize(
    ("shape", "attrs"),
    [
        ((6, 70), {"axis": 0}),  # no kept axis to split view-blocks along
        ((6, 8, 70), {"axis": 2}),  # the innermost axis
        ((6, 8, 5), {"axis": 0}),  # rows too short for the tile path
        ((6, 8, 70), {"axis": (0, 1, 2)}),  # a full reduction (fused as before)
    ],
)
def test_reductions_that_do_not_fit_run_as_before(shape, attrs):
    def program(rec: Recorder):
        x = rec.array(RNG.random(shape))
        doubled = rec.ufunc("multiply", x, 2.0)
        result = rec.reduce("sum", doubled, **attrs)
        rec.release(doubled)
        return [result]

    rec = Recorder()
    program(rec)
    fused_axis = [g for g in fused_groups(rec) if g.axis_reductions]
    assert fused_axis == []
    run_both(program, block=7, exact=False)


def test_different_reduced_axes_make_different_kernels():
    def program(rec: Recorder):
        x = rec.array(RNG.random((4, 5, 70)))
        return [rec.reduce("sum", x, axis=0), rec.reduce("sum", x, axis=1), rec.reduce("sum", x, axis=(0, 1))]

    stats = run_both(program, block=50, exact=False).last_stats
    assert stats.kernels == 2  # the full reduction joins the second


def test_an_in_place_update_after_an_axis_reduction_is_seen_only_after_it():
    def program(rec: Recorder):
        x = rec.array(RNG.random((4, 6, 70)))
        before = rec.reduce("sum", x, axis=0)
        rec.emit("multiply", (x,), (x, 2.0))
        after = rec.reduce("max", x, axis=0)
        return [before, after, x]

    stats = run_both(program, block=7, exact=True, schedule="reverse").last_stats
    assert stats.kernels == 1


@pytest.fixture
def kernel_cache(tmp_path_factory, monkeypatch):
    pytest.importorskip("numba")
    directory = tmp_path_factory.getbasetemp() / "shoal-kernels"
    monkeypatch.setenv("SHOAL_CACHE_DIR", str(directory))
    return directory


@pytest.mark.full
def test_compiled_axis_reductions_of_every_op_and_dtype(kernel_cache):
    """One kernel per dtype group (all share the shape and the reduced axis)."""

    def program(rec: Recorder):
        kept = []
        for position, name in enumerate(DTYPES):
            dtype = np.dtype(name)
            ops = [op for op in OPS if supported(op, dtype)]
            padded = rec.array(values(dtype, (6, 8, 73), "prod"))
            x = rec.index(padded, (slice(1, 6), slice(position % 2, 7), slice(2, 72)))  # not aligned
            doubled = rec.ufunc("add", x, x)
            kept += [rec.reduce(op, doubled if op not in ("prod", "all", "any") else x, axis=0, keepdims=position % 2 == 0) for op in ops]
            rec.release(doubled)
        return kept

    engine = run_both(program, block=300, compile="sync", exact=False)
    stats = engine.last_stats
    assert engine.compile_errors == []
    assert stats.kernels == stats.compilable_kernels and stats.whole_ops == 0
    assert stats.compiled_block_ops == stats.block_ops


@pytest.mark.full
def test_compiled_axis_tuples_dtypes_and_the_lattice_pattern(kernel_cache):
    def program(rec: Recorder):
        x = rec.array(RNG.normal(size=(3, 4, 5, 66)))
        small = rec.array(RNG.integers(-100, 100, (7, 5, 64)).astype(np.int8))
        single = rec.array(RNG.normal(size=(7, 5, 64)).astype(np.float32))
        populations = rec.array(RNG.random((9, 16, 96)))
        return [
            rec.reduce("sum", x, axis=(0, 2)),
            rec.reduce("mean", x, axis=(-2, 0), keepdims=True),
            rec.reduce("sum", small, axis=0, dtype=np.int8),
            rec.reduce("sum", small, axis=0),
            rec.reduce("mean", single, axis=0),
            rec.reduce("sum", single, axis=0, dtype=np.float64),
            *lattice_macroscopic(rec, populations),
        ]

    engine = run_both(program, block=300, compile="sync", exact=False)
    assert engine.compile_errors == []
    assert engine.last_stats.kernels == 4
    assert engine.last_stats.compiled_block_ops == engine.last_stats.block_ops - 2  # all but releasing the two sums


@pytest.mark.parametrize("dtype", ["float32", "int8", "bool"])
def test_numpy_programs_fuse_axis_reductions_and_match_numpy(dtype, monkeypatch):
    """Through ``shoal.numpy``: the frontend's axis, keepdims and dtype attributes as fused."""
    runtime = pytest.importorskip("shoal.runtime")
    import shoal.numpy as snp

    monkeypatch.setenv("SHOAL_DIRECT_WORK", "0")
    monkeypatch.setenv("SHOAL_BLOCK_SIZE", "500")
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    data = values(np.dtype(dtype), (4, 5, 6, 70), "sum")

    def reductions(xp, x):
        y = x * 3 if dtype != "bool" else x & x
        return [
            xp.sum(y, axis=0),
            xp.sum(y, axis=(-2, 0), keepdims=True),
            xp.mean(y, axis=1),
            xp.max(y, axis=(0, 2)),
            xp.sum(y, axis=-3, dtype=np.int16 if dtype != "float32" else np.float64),
            y.any(axis=2, keepdims=True),
        ]

    expected = reductions(np, data)
    with runtime.configure(engine="node", eager_threshold=0) as current:
        lazy = reductions(snp, snp.array(data))
        got = [np.asarray(lazy[0])]  # runs the one batch
        stats = current.engine.last_stats
        got += [np.asarray(value) for value in lazy[1:]]
    assert stats.kernels >= 1 and stats.whole_ops == 0 and stats.axis_panels == 0
    for value, want in zip(got, expected):
        assert value.dtype == want.dtype and value.shape == want.shape
        np.testing.assert_allclose(value, want, rtol=2e-6 if dtype == "float32" else 1e-12)


def test_a_deferred_in_place_update_and_an_axis_reduction_stay_in_separate_kernels():
    def program(rec: Recorder):
        x = rec.array(RNG.random((6, 8, 70)))
        z = rec.array(RNG.random((5, 8, 70)))
        later, earlier = rec.index(x, slice(1, None)), rec.index(x, slice(None, -1))
        rec.emit("add", (later,), (earlier, 1.0))  # reads rows the update overwrites: deferred
        return [x, rec.reduce("sum", z, axis=0), rec.reduce("sum", rec.ufunc("multiply", z, 2.0), axis=0)]

    rec = Recorder()
    program(rec)
    groups = fused_groups(rec)
    assert [bool(g.deferred) for g in groups] == [True, False]
    assert groups[1].axis_reductions and not groups[0].axis_reductions
    run_both(program, block=7, exact=True, schedule="reverse")

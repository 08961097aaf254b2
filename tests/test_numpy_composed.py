"""Functions Shoal composes from its lazy operations (``std``/``var`` with ``correction``,
``flip``, ``take``, ``repeat``, ``tile``, ``trace``, ``matrix_transpose``, ``cumulative_sum``, ``diff``, ``gradient``,
``nansum``, ``nanprod``, ``nancumsum``, ``nancumprod``,
...): NumPy's results and errors, and no fallback counted (``no_fallback``)."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy_fixtures import (
    DIFFERENTIAL,
    NUMERIC_DTYPES,
    arrays,
    assert_same,
    check_same,
    count_reads,
    dtypes,
    needs_runtime,
    shapes,
)

pytestmark = pytest.mark.usefixtures("no_fallback")

axes = st.none() | st.integers(-4, 3)
small = arrays(dtypes, shapes, bound=100)
numeric = arrays(st.sampled_from(NUMERIC_DTYPES), shapes, bound=100)


@DIFFERENTIAL
@given(value=numeric, axis=axes, correction=st.sampled_from([0, 1, 1.5, 2]), name=st.sampled_from(["std", "var"]))
def test_spread_with_correction(snp: ModuleType, value: np.ndarray, axis, correction, name: str) -> None:
    check_same(snp, lambda xp, v: getattr(xp, name)(v, axis=axis, correction=correction), value, rtol=1e-9)
    check_same(snp, lambda xp, v: getattr(xp, name)(v, axis=axis, ddof=correction, keepdims=True), value, rtol=1e-9)
    check_same(snp, lambda xp, v: getattr(xp, name)(v, ddof=1, correction=correction), value)


@DIFFERENTIAL
@given(value=small, axis=axes | st.just((0, -1)))
def test_flip_views_and_writes_through(snp: ModuleType, value: np.ndarray, axis) -> None:
    check_same(snp, lambda xp, v: xp.flip(v, axis), value)

    def write(xp, v):
        flipped = xp.flip(v, axis)
        flipped[...] = 7
        return flipped

    check_same(snp, write, value)  # a view, as in NumPy: the write reaches the input
    if value.ndim >= 2:
        check_same(snp, lambda xp, v: (xp.flipud(v), xp.fliplr(v)), value)


@DIFFERENTIAL
@given(
    value=small,
    indices=st.integers(-7, 7) | st.lists(st.integers(-7, 7), max_size=6),
    axis=axes,
    mode=st.sampled_from(["raise", "wrap", "clip"]),
)
def test_take(snp: ModuleType, value: np.ndarray, indices, axis, mode: str) -> None:
    if mode == "wrap" and value.size == 0:
        # NumPy 2.4's wrap mode loops forever on an empty axis when the result is empty too
        # (``np.take(np.empty((0, 0)), 0, axis=0, mode="wrap")``), out of reach of any timeout.
        assume(False)
    check_same(snp, lambda xp, v: xp.take(v, indices, axis=axis, mode=mode), value)
    check_same(snp, lambda xp, v: v.take(np.asarray(indices), axis, None, mode), value)

    def taken_is_a_copy(xp, v):
        result = xp.take(v, indices, axis=axis, mode=mode)
        v[...] = 0
        return result

    check_same(snp, taken_is_a_copy, value)


@DIFFERENTIAL
@given(value=small, repeats=st.integers(-1, 3) | st.lists(st.integers(0, 3), min_size=0, max_size=5), axis=axes)
def test_repeat(snp: ModuleType, value: np.ndarray, repeats, axis) -> None:
    check_same(snp, lambda xp, v: xp.repeat(v, repeats, axis=axis), value)
    check_same(snp, lambda xp, v: v.repeat(repeats, axis=axis), value)


@DIFFERENTIAL
@given(value=small, reps=st.integers(0, 3) | st.lists(st.integers(0, 3), max_size=4).map(tuple))
def test_tile(snp: ModuleType, value: np.ndarray, reps) -> None:
    check_same(snp, lambda xp, v: xp.tile(v, reps), value)


@DIFFERENTIAL
@given(value=numeric, offset=st.integers(-3, 3), axes_pair=st.sampled_from([(0, 1), (1, 0), (-1, -2), (0, 2), (0, 0)]))
def test_trace(snp: ModuleType, value: np.ndarray, offset: int, axes_pair) -> None:
    axis1, axis2 = axes_pair
    check_same(snp, lambda xp, v: xp.trace(v, offset, axis1, axis2), value)
    check_same(snp, lambda xp, v: v.trace(offset, axis1, axis2, dtype=np.float64), value, rtol=1e-12)
    check_same(snp, lambda xp, v: xp.linalg.trace(v, offset=offset), value)


@DIFFERENTIAL
@given(value=small)
def test_matrix_transpose_and_outer(snp: ModuleType, value: np.ndarray) -> None:
    check_same(snp, lambda xp, v: xp.matrix_transpose(v), value)
    check_same(snp, lambda xp, v: xp.linalg.matrix_transpose(v), value)
    check_same(snp, lambda xp, v: xp.linalg.outer(v, v), value)


@DIFFERENTIAL
@given(first=numeric, second=numeric)
def test_outer_of_any_shapes_and_views(snp: ModuleType, first: np.ndarray, second: np.ndarray) -> None:
    check_same(snp, lambda xp, a, b: xp.outer(a, b), first, second)
    check_same(snp, lambda xp, a, b: xp.outer(a.T, b.reshape(-1)[::-2]), first, second)  # strided, reversed
    check_same(snp, lambda xp, a, b: xp.outer(a, np.asarray(b)), first, second)  # NumPy data beside lazy
    check_same(snp, lambda xp, a, b: xp.outer(a.reshape(-1).tolist(), b), first, second)


@DIFFERENTIAL
@given(first=numeric, second=numeric)
def test_outer_of_numpy_inputs_recorded_as_at_the_call(snp: ModuleType, first: np.ndarray, second: np.ndarray) -> None:
    """NumPy data in: a large result is recorded (every result is large here), from the inputs'
    values at the call, also where the program writes to them before the result is read."""

    def written_after(xp, a, b):
        a, b = np.asarray(a).copy(), np.asarray(b).copy()
        result = xp.outer(a, b)
        a[...] = 0
        b[...] = 0
        return result

    check_same(snp, written_after, first, second)
    check_same(snp, lambda xp, a, b: xp.outer(np.asarray(a).T, np.asarray(b)[..., ::-1]), first, second)


def test_outer_of_numpy_inputs_is_lazy_where_large_and_numpys_where_not(snp: ModuleType) -> None:
    needs_runtime()
    recorded = snp.outer(np.arange(3.0), np.arange(4))
    assert type(recorded) is snp.ndarray
    assert type(snp.outer(np.array(["a"], dtype=object), np.arange(2))) is np.ndarray  # object: NumPy's
    assert_same(recorded, np.outer(np.arange(3.0), np.arange(4)))


@DIFFERENTIAL
@given(first=numeric, second=numeric)
def test_outer_into_an_output(snp: ModuleType, first: np.ndarray, second: np.ndarray) -> None:
    def into(xp, a, b):
        out = xp.zeros((a.size, b.size), np.result_type(a, b))
        return xp.outer(a, b, out), out

    check_same(snp, into, first, second)
    check_same(snp, lambda xp, a, b: xp.outer(a, b, xp.zeros((a.size + 1, b.size))), first, second)  # NumPy's error


@DIFFERENTIAL
@given(
    value=numeric,
    axis=axes,
    include_initial=st.booleans(),
    name=st.sampled_from(["cumulative_sum", "cumulative_prod"]),
    dtype=st.none() | st.sampled_from([np.float64, np.int64]),
)
def test_cumulative(snp: ModuleType, value: np.ndarray, axis, include_initial: bool, name: str, dtype) -> None:
    check_same(
        snp, lambda xp, v: getattr(xp, name)(v, axis=axis, dtype=dtype, include_initial=include_initial), value, rtol=1e-9
    )


@pytest.mark.parametrize(
    "call",
    [
        lambda xp, v: xp.take(v, 10, axis=1),
        lambda xp, v: xp.take(v, [-13]),
        lambda xp, v: xp.take(v[:0], [1], axis=0, mode="wrap"),
        lambda xp, v: xp.repeat(v, [1, 2], axis=0),
        lambda xp, v: xp.cumulative_sum(v),
        lambda xp, v: xp.linalg.outer(v, v),
        lambda xp, v: xp.matrix_transpose(v[0]),
        lambda xp, v: xp.var(v, ddof=1, correction=1),
        lambda xp, v: xp.tile(v, 1.5),
    ],
)
def test_errors_are_numpys(snp: ModuleType, call) -> None:
    value = np.arange(12.0).reshape(3, 4)
    assert check_same(snp, call, value) is not None


matrices = arrays(st.sampled_from(NUMERIC_DTYPES), hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=4), bound=20)


@DIFFERENTIAL
@given(first=matrices, second=matrices, axes=st.integers(0, 2) | st.just(([0], [0])) | st.just(([-1, 0], [0, -1])))
def test_tensordot_and_kron(snp: ModuleType, first: np.ndarray, second: np.ndarray, axes) -> None:
    check_same(snp, lambda xp, a, b: xp.tensordot(a, b, axes=axes), first, second, rtol=1e-5)
    check_same(snp, lambda xp, a, b: xp.kron(a, b), first, second, rtol=1e-6)


@DIFFERENTIAL
@given(first=matrices, second=matrices, axis=st.integers(-3, 2))
def test_vecdot(snp: ModuleType, first: np.ndarray, second: np.ndarray, axis: int) -> None:
    check_same(snp, lambda xp, a, b: xp.vecdot(a, b, axis=axis), first, second, rtol=1e-5)
    check_same(snp, lambda xp, a, b: xp.linalg.vecdot(a, a, axis=axis), first, second, rtol=1e-5)


@DIFFERENTIAL
@given(value=numeric, n=st.integers(0, 3), axis=st.integers(-3, 2), ends=st.sampled_from([None, "scalars", "rows"]))
def test_diff(snp: ModuleType, value: np.ndarray, n: int, axis: int, ends: str | None) -> None:
    def differences(xp, v):
        if ends == "scalars":
            return xp.diff(v, n=n, axis=axis, prepend=1, append=2.5)
        if ends == "rows":
            return xp.diff(v, n=n, axis=axis, prepend=xp.take(v, [0], axis=axis), append=xp.take(v, [-1], axis=axis))
        return xp.diff(v, n=n, axis=axis)

    check_same(snp, differences, value)
    check_same(snp, lambda xp, v: xp.diff(v > 0, axis=axis), value)  # booleans: not_equal


@DIFFERENTIAL
@given(
    value=numeric,
    axis=st.none() | st.integers(-3, 2),
    spacing=st.sampled_from(["none", "scalar", "coordinates", "uniform coordinates"]),
    edge_order=st.sampled_from([1, 2, 3]),
)
def test_gradient(snp: ModuleType, value: np.ndarray, axis, spacing: str, edge_order: int) -> None:
    def gradient(xp, v):
        arguments: tuple = ()
        if spacing == "scalar":
            arguments = (0.5,)
        elif spacing != "none" and axis is not None and -v.ndim <= axis < v.ndim:
            extent = v.shape[axis]
            steps = np.full(extent, 0.5) if spacing == "uniform coordinates" else np.arange(1.0, extent + 1.0)
            arguments = (np.cumsum(steps),)
        return xp.gradient(v, *arguments, axis=axis, edge_order=edge_order)

    check_same(snp, gradient, value, rtol=1e-9)


def test_diff_and_gradient_of_a_lazy_array_stay_lazy() -> None:
    """NumPy's own implementations began with ``asanyarray``, which computed the array."""
    import shoal.numpy as snp
    from shoal import runtime
    from shoal.numpy import _lazy

    with runtime.configure(engine="reference", eager_threshold=0):
        values = snp.arange(24.0).reshape(4, 6) ** 2
        assert _lazy.is_lazy(snp.diff(values, axis=0)) and _lazy.is_lazy(snp.gradient(values, axis=1))
        rows, columns = snp.gradient(values, 2.0)
        assert _lazy.is_lazy(rows) and _lazy.is_lazy(columns)
        expected = np.arange(24.0).reshape(4, 6) ** 2
        np.testing.assert_array_equal(np.asarray(columns), np.gradient(expected, 2.0)[1])


@DIFFERENTIAL
@given(value=numeric, axis=st.none() | st.integers(-3, 2), name=st.sampled_from(["nansum", "nanprod", "nancumsum", "nancumprod"]), keepdims=st.booleans())
def test_nan_ignoring_sums_and_products(snp_recorded: ModuleType, value: np.ndarray, axis, name: str, keepdims: bool) -> None:
    if value.dtype.kind in "fc" and value.size:
        value = value.copy()
        value.flat[::3] = np.nan
    options = {"keepdims": keepdims} if name in ("nansum", "nanprod") else {}
    check_same(snp_recorded, lambda xp, v: getattr(xp, name)(v, axis=axis, **options), value, rtol=1e-5)


@DIFFERENTIAL
@given(value=small, k=st.integers(-6, 6) | st.sampled_from([True, 2**40, -(2**40), 1.5]), name=st.sampled_from(["tril", "triu"]))
def test_triangles(snp_recorded: ModuleType, value: np.ndarray, k, name: str) -> None:
    """Any dtype, 0 to 3 dimensions (a 1-d input gives a square; a 0-d one NumPy's error),
    offsets beyond the matrix, a ``bool`` offset and a ``float`` one (NumPy's own mask)."""
    check_same(snp_recorded, lambda xp, v: getattr(xp, name)(v, k), value)
    check_same(snp_recorded, lambda xp, v: getattr(xp, name)(v.T, k=k), value)


def test_triangles_of_a_lazy_array_stay_lazy(monkeypatch) -> None:
    """NumPy's own ``tril`` began with ``asanyarray``, which made the matrix a NumPy copy, and
    made its mask in NumPy: now nothing is read until the sum is."""
    import shoal.numpy as snp
    from shoal import runtime
    from shoal.numpy import _lazy

    read = count_reads(monkeypatch)
    with runtime.configure(engine="node", eager_threshold=16):
        matrix = snp.arange(60.0).reshape(6, 10) + 1.0
        lower, upper = snp.tril(matrix, -1), snp.triu(matrix, 2)
        assert _lazy.is_lazy(lower) and _lazy.is_lazy(upper) and not read
        expected = np.arange(60.0).reshape(6, 10) + 1.0
        assert float(snp.sum(lower)) == float(np.sum(np.tril(expected, -1)))
        np.testing.assert_array_equal(np.asarray(upper), np.triu(expected, 2))


@DIFFERENTIAL
@given(
    first=numeric,
    second=numeric,
    tolerances=st.sampled_from([(1e-5, 1e-8), (0.0, 0.0), (0.5, 1), (1e-3, float("inf"))]),
    equal_nan=st.booleans(),
)
def test_isclose_and_allclose(snp_recorded: ModuleType, first: np.ndarray, second: np.ndarray, tolerances, equal_nan: bool) -> None:
    """Any numeric dtypes (integers are compared as floats), shapes that broadcast or not
    (NumPy's error), and tolerances of any kind."""
    rtol, atol = tolerances
    check_same(snp_recorded, lambda xp, a, b: xp.isclose(a, b, rtol, atol, equal_nan), first, second)
    check_same(snp_recorded, lambda xp, a, b: xp.allclose(a, b, rtol=rtol, atol=atol, equal_nan=equal_nan), first, second)


@pytest.mark.parametrize("equal_nan", [False, True])
@pytest.mark.parametrize("tolerances", [(1e-5, 1e-8), (1e-2, 0.0), (0.0, 0.5)])
def test_isclose_at_the_edge_of_its_tolerance(snp_recorded: ModuleType, tolerances, equal_nan: bool) -> None:
    """Values a fraction or a multiple of the tolerance apart, NaN on one side or both, and
    infinities of either sign: every element's answer is NumPy's."""
    rtol, atol = tolerances
    base = np.linspace(-50.0, 50.0, 48)
    apart = np.tile([0.0, 0.5, 0.99, 1.01, 2.0, -0.99, -1.01, 3.0], 6) * (atol + rtol * np.abs(base))
    other = base + apart
    base[[3, 9]], other[[3, 17]] = np.nan, np.nan
    base[[20, 21, 22]], other[[20, 21, 22]] = np.inf, [np.inf, -np.inf, 1.0]
    check_same(snp_recorded, lambda xp, a, b: xp.isclose(a, b, rtol, atol, equal_nan), base, other)
    check_same(snp_recorded, lambda xp, a, b: xp.isclose(a.reshape(6, 8), b[:8], rtol, atol, equal_nan), base, other)
    check_same(snp_recorded, lambda xp, a, b: xp.allclose(a[30:], b[30:], rtol, atol, equal_nan), base, other)


@DIFFERENTIAL
@given(value=numeric, axis=st.none() | st.integers(-3, 2), weighted=st.booleans(), returned=st.booleans(), keepdims=st.booleans())
def test_average(snp_recorded: ModuleType, value: np.ndarray, axis, weighted: bool, returned: bool, keepdims: bool) -> None:
    """Plain and weighted (weights as the array, or along the axis), with the sum of weights
    returned, keeping dimensions; NumPy's errors (weights of the wrong shape, an empty array)."""

    def average(xp, v):
        weights = None
        if weighted:
            weights = np.arange(1.0, v.size + 1.0).reshape(v.shape) if axis is None or not v.ndim else np.arange(1.0, v.shape[axis] + 1.0)
        return xp.average(v, axis=axis, weights=weights, returned=returned, keepdims=keepdims)

    check_same(snp_recorded, average, value, rtol=1e-9)


floats_with_nans = arrays(st.sampled_from([np.dtype("float64"), np.dtype("float32"), np.dtype("complex128"), np.dtype("int32")]), shapes, bound=50)


@DIFFERENTIAL
@given(value=floats_with_nans, axis=st.none() | st.integers(-3, 2), keepdims=st.booleans(), pattern=st.sampled_from(["some", "rows", "all", "none"]))
def test_nan_ignoring_means_and_extremes(snp_recorded: ModuleType, value: np.ndarray, axis, keepdims: bool, pattern: str) -> None:
    """``nanmean``, ``nanmax``, ``nanmin``, ``nanvar`` and ``nanstd`` recorded: NaNs here and
    there, whole slices of them (NaN results), all of them, none, integers (no NaN at all),
    degrees of freedom; NumPy's errors for axes out of range and empty arrays."""
    if value.dtype.kind in "fc" and value.size:
        value = value.copy()
        if pattern == "some":
            value.flat[::3] = np.nan
        elif pattern == "rows" and value.ndim:
            value[0] = np.nan
        elif pattern == "all":
            value[...] = np.nan
    for name in ("nanmean", "nanmax", "nanmin", "nanvar", "nanstd"):
        check_same(snp_recorded, lambda xp, v, name=name: getattr(xp, name)(v, axis=axis, keepdims=keepdims), value, rtol=1e-6)
    check_same(snp_recorded, lambda xp, v: xp.nanvar(v, axis=axis, ddof=1), value, rtol=1e-6)
    check_same(snp_recorded, lambda xp, v: xp.nanstd(v, axis=axis, correction=1.5, dtype=np.float64), value, rtol=1e-9)
    check_same(snp_recorded, lambda xp, v: xp.nanmax(v, axis=axis, initial=-1e9), value)
    check_same(snp_recorded, lambda xp, v: xp.nanmean(v, axis=axis, dtype=np.float64), value, rtol=1e-12)


def test_nan_ignoring_reductions_warn_at_the_programs_line(every_array_lazy) -> None:
    """Their own warnings ("Mean of empty slice", "All-NaN slice encountered", "Degrees of
    freedom <= 0 for slice.") name the line that called them, once each, as NumPy's do."""
    import warnings

    import shoal.numpy as snp

    def program(xp):
        grid = xp.ones((3, 4)) * 2.0
        grid[1] = np.nan
        return [xp.nanmean(grid, axis=1), xp.nanmax(grid, axis=1), xp.nanmin(grid, axis=1), xp.nanstd(grid, axis=1, ddof=3)]

    found = []
    for xp in (np, snp):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            values = [np.asarray(value) for value in program(xp)]
        found.append((values, [(w.category, str(w.message), w.filename, w.lineno) for w in caught]))
    (want, expected), (have, got) = found
    for one, other in zip(want, have):
        np.testing.assert_array_equal(other, one)
    assert got == expected and len(expected) == 4


@DIFFERENTIAL
@given(value=small, k=st.integers(-6, 6))
def test_diag(snp_recorded: ModuleType, value: np.ndarray, k: int) -> None:
    """A 1-d input on the diagonal of a new matrix, the diagonal of a 2-d one (a read-only view),
    NumPy's error for other dimensions."""
    from shoal.numpy import _dispatch

    before = _dispatch.FALLBACKS["diag"]
    check_same(snp_recorded, lambda xp, v: xp.diag(v, k), value)
    check_same(snp_recorded, lambda xp, v: xp.diag(v.reshape(-1)[:4], k=k) + 1, value)
    assert _dispatch.FALLBACKS["diag"] == before  # recorded, not NumPy's on computed values


@DIFFERENTIAL
@given(first=small, second=small, equal_nan=st.booleans(), nans=st.booleans())
def test_array_equal(snp_recorded: ModuleType, first: np.ndarray, second: np.ndarray, equal_nan: bool, nans: bool) -> None:
    """Arrays of other shapes (False), of other dtypes, equal up to NaNs at the same places or
    at others; a Python ``bool`` either way, as NumPy's."""
    if nans and first.dtype.kind in "fc" and first.size:
        first = first.copy()
        first.flat[::2] = np.nan
    for other in (second, first.copy(), first[..., ::-1].copy() if first.ndim else first.copy()):
        check_same(snp_recorded, lambda xp, a, b: xp.array_equal(a, b, equal_nan=equal_nan), first, other)
    check_same(snp_recorded, lambda xp, a: xp.array_equal(a, a, equal_nan=equal_nan), first)


@DIFFERENTIAL
@given(vector=arrays(dtypes, st.integers(0, 5).map(lambda n: (n,)), bound=50), matrix=small)
def test_column_stack(snp_recorded: ModuleType, vector: np.ndarray, matrix: np.ndarray) -> None:
    """Vectors as columns beside matrices; NumPy's errors for lengths and dimensions that differ."""
    check_same(snp_recorded, lambda xp, v, m: xp.column_stack([v, v * 2]), vector, matrix)
    check_same(snp_recorded, lambda xp, v, m: xp.column_stack((v, m)), vector, matrix)


@pytest.mark.parametrize(
    "call",
    [
        lambda xp, a, b: xp.isclose(a, b),
        lambda xp, a, b: xp.allclose(a, b),
        lambda xp, a, b: xp.array_equal(a, b),
        lambda xp, a, b: xp.column_stack([a[:, 0], b[:, 1]]),
        lambda xp, a, b: xp.average(a, axis=0),
        lambda xp, a, b: xp.nanmean(a, axis=1),
        lambda xp, a, b: xp.nanmax(a),
        lambda xp, a, b: xp.nanstd(a, axis=0),
    ],
    ids=["isclose", "allclose", "array_equal", "column_stack", "average", "nanmean", "nanmax", "nanstd"],
)
def test_functions_of_lazy_arrays_read_no_more_than_their_answers(monkeypatch, call) -> None:
    """NumPy's own code for these read their lazy arguments whole (``asanyarray``, ``np.array``)
    and computed in NumPy; now what they read is at most as large as their answer (the checks
    NumPy's code makes on it, or on the counts behind it)."""
    import shoal.numpy as snp
    from shoal import runtime

    with runtime.configure(engine="node", eager_threshold=0, settled_threshold=0):
        first, second = snp.arange(48.0).reshape(6, 8) / 7.0, snp.arange(48.0).reshape(6, 8) / 7.0 + 1e-9
        sizes = count_reads(monkeypatch)
        result = call(snp, first, second)
        read = max(sizes, default=0)
        monkeypatch.undo()
        expected = call(np, np.arange(48.0).reshape(6, 8) / 7.0, np.arange(48.0).reshape(6, 8) / 7.0 + 1e-9)
        np.testing.assert_allclose(np.asarray(result), expected, rtol=1e-12)
        assert read <= max(1, np.size(expected))  # a check of the answer (NaN counts), never the 48 inputs


@DIFFERENTIAL
@given(value=small, begin=st.none() | st.sampled_from([[7], [1.5, -2.0], 3, []]), end=st.none() | st.sampled_from([[9], 2.5, [[1, 2]]]), k=st.integers(-3, 3))
def test_ediff1d_and_diagflat(snp_recorded: ModuleType, value: np.ndarray, begin, end, k: int) -> None:
    """``ediff1d`` in the array's dtype between ``to_begin`` and ``to_end`` (NumPy's
    ``same_kind`` check on each, its error for booleans); ``diagflat`` of the flattened array."""
    check_same(snp_recorded, lambda xp, v: xp.ediff1d(v, to_end=end, to_begin=begin), value)
    check_same(snp_recorded, lambda xp, v: xp.diagflat(v, k), value)


@pytest.mark.parametrize("dtype", [np.float64, np.float32, np.complex128, np.int64])
@pytest.mark.parametrize("copy", [False, True])
def test_nan_to_num_without_a_copy_changes_the_array_itself(snp: ModuleType, dtype: type, copy: bool) -> None:
    """``copy=False`` writes into the argument and returns it, as NumPy does (the values went
    into a NumPy copy, and the argument kept its NaNs)."""
    values = np.array([np.nan, np.inf, -np.inf, 1.5, 0.0, -2.0] * 3)
    array = np.arange(18).astype(dtype)
    if dtype is not np.int64:
        array.real = values
    if dtype is np.complex128:
        array.imag = values[::-1]

    def convert(xp, a):
        view = a[::2]  # written through a view too
        result = xp.nan_to_num(view, copy=copy, nan=-1.0, posinf=9.0)
        assert (result is view) is not copy
        return result

    check_same(snp, convert, array)

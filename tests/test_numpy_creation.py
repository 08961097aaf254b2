"""Array creation: Shoal against NumPy over dtypes and argument forms."""

from __future__ import annotations

import decimal
import fractions
import re
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy_fixtures import (
    ALL_DTYPES,
    DIFFERENTIAL,
    arrays,
    assert_same,
    check_same,
    dtypes,
    shapes,
    summarized,
)

DTYPE_NAMES = [dtype.name for dtype in ALL_DTYPES]
dtype_arguments = (
    st.none() | st.sampled_from(ALL_DTYPES) | st.sampled_from([int, float, complex, bool])
)
shape_arguments = st.integers(0, 5) | st.lists(st.integers(0, 4), max_size=3).map(tuple)


@pytest.mark.parametrize("dtype", [None, *DTYPE_NAMES])
@pytest.mark.parametrize(
    "data",
    [[[1, 2, 3], [4, 5, 6]], [1.5, -2.0], [True, False], [1 + 2j, 3], 7, 2.5, [[]]],
    ids=repr,
)
def test_array_and_asarray_from_python_data(snp_any: ModuleType, dtype, data) -> None:
    check_same(snp_any, lambda xp: xp.array(data, dtype=dtype))
    check_same(snp_any, lambda xp: xp.asarray(data, dtype=dtype))


@DIFFERENTIAL
@given(array=arrays(dtypes, shapes, bound=100), dtype=dtype_arguments)
def test_array_from_ndarray_with_dtype(snp_any: ModuleType, array: np.ndarray, dtype) -> None:
    check_same(snp_any, lambda xp, a: xp.array(a, dtype=dtype), array)
    check_same(snp_any, lambda xp, a: xp.asarray(a[::-1], dtype=dtype), array)


@DIFFERENTIAL
@given(
    shape=shape_arguments,
    dtype=dtype_arguments,
    fill=st.integers(-5, 300) | st.floats(-5, 5) | st.booleans(),
)
def test_filled_arrays(snp_any: ModuleType, shape, dtype, fill) -> None:
    check_same(snp_any, lambda xp: xp.zeros(shape, dtype=dtype))
    check_same(snp_any, lambda xp: xp.ones(shape, dtype=dtype))
    check_same(snp_any, lambda xp: xp.full(shape, fill, dtype=dtype))
    empty = snp_any.empty(shape, dtype=dtype)
    expected = np.empty(shape, dtype=dtype)
    assert (empty.shape, empty.dtype) == (expected.shape, expected.dtype)


@DIFFERENTIAL
@given(
    array=arrays(dtypes, shapes, bound=100),
    dtype=dtype_arguments,
    fill=st.integers(0, 100),
    shape=st.none() | shape_arguments,
)
def test_like_functions(snp_any: ModuleType, array: np.ndarray, dtype, fill: int, shape) -> None:
    check_same(snp_any, lambda xp, a: xp.zeros_like(a, dtype=dtype, shape=shape), array)
    check_same(snp_any, lambda xp, a: xp.ones_like(a, dtype=dtype, shape=shape), array)
    check_same(snp_any, lambda xp, a: xp.full_like(a, fill, dtype=dtype, shape=shape), array)
    like = snp_any.empty_like(snp_any.asarray(array), dtype=dtype, shape=shape)
    expected = np.empty_like(array, dtype=dtype, shape=shape)
    assert (like.shape, like.dtype) == (expected.shape, expected.dtype)


@DIFFERENTIAL
@given(
    start=st.integers(-20, 20) | st.floats(-20, 20),
    stop=st.integers(-20, 20) | st.floats(-20, 20),
    step=st.integers(-5, 5).filter(bool) | st.floats(0.25, 3) | st.floats(-3, -0.25),
    dtype=st.none() | st.sampled_from(["int16", "int64", "float32", "float64", "complex128"]),
)
def test_arange(snp_any: ModuleType, start, stop, step, dtype) -> None:
    check_same(snp_any, lambda xp: xp.arange(stop, dtype=dtype))
    check_same(snp_any, lambda xp: xp.arange(start, stop, dtype=dtype))
    check_same(snp_any, lambda xp: xp.arange(start, stop, step, dtype=dtype))


@DIFFERENTIAL
@given(
    start=st.floats(-100, 100) | st.integers(-100, 100),
    stop=st.floats(-100, 100) | st.integers(-100, 100),
    num=st.integers(0, 40),
    endpoint=st.booleans(),
    dtype=st.none() | st.sampled_from(["int32", "float32", "float64", "complex64"]),
)
def test_linspace(snp_any: ModuleType, start, stop, num, endpoint, dtype) -> None:
    check_same(snp_any, lambda xp: xp.linspace(start, stop, num, endpoint=endpoint, dtype=dtype))
    check_same(snp_any, lambda xp: xp.linspace(start, stop, num, endpoint=endpoint, retstep=True))


@DIFFERENTIAL
@given(
    rows=st.integers(0, 6),
    columns=st.none() | st.integers(0, 6),
    diagonal=st.integers(-7, 7),
    dtype=dtype_arguments,
)
def test_eye_and_identity(snp_any: ModuleType, rows, columns, diagonal, dtype) -> None:
    check_same(snp_any, lambda xp: xp.eye(rows, columns, k=diagonal, dtype=dtype))
    check_same(snp_any, lambda xp: xp.identity(rows, dtype=dtype))


@pytest.mark.parametrize("indexing", ["xy", "ij"])
@pytest.mark.parametrize("sparse", [False, True])
def test_meshgrid(snp_any: ModuleType, indexing: str, sparse: bool) -> None:
    x, y, z = np.arange(3.0), np.arange(4, dtype=np.int32), np.linspace(0, 1, 2)
    check_same(snp_any, lambda xp, a, b: xp.meshgrid(a, b, indexing=indexing, sparse=sparse), x, y)
    check_same(snp_any, lambda xp, *v: xp.meshgrid(*v, indexing=indexing, sparse=sparse), x, y, z)


def written_broadcast_views(xp: ModuleType) -> list:
    """Writes through ``meshgrid(copy=False)`` and ``broadcast_arrays`` views: NumPy's views are
    writeable with a warning and the write lands in the shared memory."""
    x = np.arange(3.0)
    with pytest.warns(FutureWarning):
        grid, _ = xp.meshgrid(x, np.arange(2.0), copy=False)
        readable = bool(grid.flags.writeable)
    with pytest.warns(DeprecationWarning, match="broadcast_arrays"):
        grid[1, 0] = 9.0
    row, _ = xp.broadcast_arrays(np.arange(4), np.zeros((2, 1)))
    with pytest.warns(DeprecationWarning, match="broadcast_arrays"):
        row[0, 2] = -1
    return [readable, x.tolist(), np.asarray(grid).tolist(), np.asarray(row).tolist()]


def test_small_broadcast_views_are_numpys_writeable_views() -> None:
    import shoal.numpy as snp

    assert written_broadcast_views(snp) == written_broadcast_views(np)


@pytest.mark.parametrize("dtype", [float, int, "int8", "complex64"])
def test_fromfunction(snp_any: ModuleType, dtype) -> None:
    check_same(snp_any, lambda xp: xp.fromfunction(lambda i, j: i * 10 + j, (3, 4), dtype=dtype))
    check_same(snp_any, lambda xp: xp.fromfunction(lambda i: i**2, (5,), dtype=dtype))


def test_created_arrays_are_shoal_arrays(snp_any: ModuleType) -> None:
    for created in (
        snp_any.zeros(3),
        snp_any.ones((2, 2)),
        snp_any.arange(4),
        snp_any.linspace(0, 1, 5),
        snp_any.eye(3),
        snp_any.array([1, 2]),
        snp_any.full(2, 7),
    ):
        assert isinstance(created, snp_any.ndarray)
    assert_same(snp_any.arange(5) * 2, np.arange(5) * 2)


def broadcasts_after_a_write(xp: ModuleType) -> list:
    """Broadcast views of NumPy data (large against an eager threshold of 8), read after the data
    changed, alone and as operands of lazy work."""
    row, column = np.arange(5.0), np.arange(4.0)
    views = [
        xp.broadcast_to(row, (4, 5)),
        *xp.meshgrid(row, column, copy=False),
        xp.broadcast_arrays(row, column[:, None])[0],
        xp.broadcast_to(row[::-1, None], (5, 4)),  # reversed, the repeated axis last
    ]
    row[0] = 99.0
    column[1] = -1.0
    lazy = xp.arange(20.0).reshape(4, 5)
    worked = [lazy * 2 + views[0], lazy - views[2], (xp.ones((5, 4)) * views[4]).sum(axis=0)]
    return [np.asarray(value).tolist() for value in (*views, *worked)]


@pytest.mark.parametrize("engine", ["node", "reference"])
def test_broadcasts_of_numpy_data_show_later_writes_to_it(engine: str) -> None:
    """``broadcast_to``, ``broadcast_arrays`` and ``meshgrid(copy=False)`` of NumPy data are NumPy's
    views at any size: a write to the data shows through them (a lazy copy made at the call did
    not), and lazy work reads them as they are when it is recorded."""
    import shoal.numpy as snp
    from shoal import runtime

    with runtime.configure(engine=engine, eager_threshold=8, settled_threshold=0):  # work recorded, not run at once
        got = broadcasts_after_a_write(snp)
    assert got == broadcasts_after_a_write(np)


def filled_with_a_count(xp: ModuleType, size: int) -> list:
    """``full``, ``full_like`` and ``copyto`` of a count (a NumPy ``int64``) too large for
    ``int8``: NumPy's ``copyto`` casts it unsafely and it wraps, whether or not the count was
    read before (an item assignment of the scalar would raise ``OverflowError``)."""
    values = xp.linspace(0, 1, size)
    results = []
    for read_first in (False, True):
        count = (values > 0.25).sum()
        if read_first:
            repr(count)
        target = xp.zeros(2, np.int8)
        xp.copyto(target, count, casting="unsafe")
        results.append([
            xp.full(2, count, dtype=np.int8).tolist(),
            xp.full_like(xp.arange(3, dtype=np.int8), count).tolist(),
            target.tolist(),
        ])
    return results


@pytest.mark.parametrize("size", [1000, 600_000])  # a count NumPy computes at once, and a lazy one
def test_filling_with_a_scalar_result_casts_as_numpy(snp_any: ModuleType, size: int) -> None:
    assert filled_with_a_count(snp_any, size) == filled_with_a_count(np, size)


def filled_with_objects(xp: ModuleType, size: int) -> list[tuple]:
    """``np.full``/``np.full_like`` of values that are not numbers: ``None`` into floats is NaN
    (Shoal filled zeros), others converted as NumPy converts them, or NumPy's error."""
    calls = [
        lambda: xp.full(size, None, dtype=float)[:3],
        lambda: xp.full_like(xp.zeros(size), None)[:3],
        lambda: xp.full((2, size // 2), None, dtype=np.float32)[:, :2],
        lambda: xp.full(size, None, dtype=complex)[-2:],
        lambda: xp.full(size, None, dtype=int),
        lambda: xp.full(size, decimal.Decimal("1.1"), dtype=float)[:3],
        lambda: xp.full_like(xp.zeros(size, dtype=np.int16), fractions.Fraction(7, 2))[-3:],
        lambda: xp.full(size, np.str_("4.5"), dtype=float)[:3],
        lambda: xp.full(size, b"6.5", dtype=np.float32)[:3],
        lambda: xp.full(size, b"x", dtype=float),
        lambda: xp.full(size, np.longdouble(0.1), dtype=float)[:3],
        lambda: xp.full(size, None)[:3],
    ]
    return [summarized(call) for call in calls]


@pytest.mark.parametrize("size", [40, 600_000])
def test_filling_with_none_and_other_objects_converts_as_numpy(snp_any: ModuleType, size: int) -> None:
    assert filled_with_objects(snp_any, size) == filled_with_objects(np, size)


def test_filling_with_none_and_other_objects_at_default_settings(snp_default: ModuleType) -> None:
    assert filled_with_objects(snp_default, 600_000) == filled_with_objects(np, 600_000)


@pytest.mark.parametrize("shape", [2.0, [2.0, 3], (2, "a"), np.float64(3), None, [[2]]])
@pytest.mark.parametrize("name", ["empty", "zeros", "ones"])
def test_a_shape_that_is_not_integers_fails_with_numpys_message(name: str, shape) -> None:
    import shoal.numpy as snp

    with pytest.raises(TypeError) as expected:
        getattr(np, name)(shape)
    with pytest.raises(TypeError, match=f"^{re.escape(str(expected.value))}$"):
        getattr(snp, name)(shape)

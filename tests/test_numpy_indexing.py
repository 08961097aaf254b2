"""Indexing: basic indices give views, advanced indices give copies, assignment broadcasts."""

from __future__ import annotations

import decimal
import fractions
from types import ModuleType

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy_fixtures import (
    DIFFERENTIAL,
    arrays,
    check_same,
    dtypes,
    nonempty_shapes,
    shapes,
    summarized,
)


def _add_one_in_place(view):
    """``view += 1`` in the view's own dtype; rebinds (no write) when ``view`` is a scalar."""
    view += view.dtype.type(1)
    return view


@DIFFERENTIAL
@given(
    array=arrays(dtypes, shapes, bound=100),
    data=st.data(),
)
def test_basic_index_reads_like_numpy(snp_any: ModuleType, array: np.ndarray, data) -> None:
    index = data.draw(hnp.basic_indices(array.shape, allow_newaxis=True, allow_ellipsis=True))
    check_same(snp_any, lambda xp, a: a[index], array)


@DIFFERENTIAL
@given(array=arrays(dtypes, nonempty_shapes, bound=100), data=st.data())
def test_writes_through_chains_of_basic_views_reach_the_base(
    snp: ModuleType, array: np.ndarray, data
) -> None:
    probe = array
    indices = []
    for _ in range(data.draw(st.integers(1, 3), label="depth")):
        index = data.draw(hnp.basic_indices(probe.shape, allow_newaxis=True, allow_ellipsis=True))
        indices.append(index)
        probe = probe[index]
        if not isinstance(probe, np.ndarray):
            break

    def write_through_views(xp, a):
        view = a
        for index in indices:
            view = view[index]
        return _add_one_in_place(view)

    check_same(snp, write_through_views, array)


@st.composite
def assignments(draw):
    """(array, basic index, value): the value broadcasts to the indexed region, or sometimes not."""
    array = draw(arrays(dtypes, nonempty_shapes, bound=100))
    index = draw(hnp.basic_indices(array.shape, allow_newaxis=True, allow_ellipsis=True))
    target = np.shape(array[index])
    value_shape = draw(
        hnp.broadcastable_shapes(target, min_dims=0, max_dims=len(target) + 1, min_side=0)
        | hnp.array_shapes(min_dims=0, max_dims=2, max_side=4)
    )
    value = np.abs(draw(arrays(dtypes, value_shape, bound=100, finite=True)))
    return array, index, value


@DIFFERENTIAL
@given(case=assignments())
def test_setitem_broadcasts_like_numpy(snp_any: ModuleType, case) -> None:
    array, index, value = case

    def assign(xp, a, v):
        a[index] = v
        return a

    check_same(snp_any, assign, array, value)


@DIFFERENTIAL
@given(case=assignments(), scalar=st.integers(0, 100) | st.floats(0, 100) | st.booleans())
def test_setitem_of_a_python_scalar(snp: ModuleType, case, scalar) -> None:
    array, index, _ = case

    def assign(xp, a):
        a[index] = scalar
        return a

    check_same(snp, assign, array)


@st.composite
def integer_index_arrays(draw, size: int):
    """Integer arrays indexing an axis of ``size``: negatives too, sometimes out of bounds."""
    low, high = (-size, size - 1) if draw(st.integers(0, 9)) else (-size - 2, size + 1)
    shape = draw(hnp.array_shapes(min_dims=0, max_dims=2, min_side=0, max_side=4))
    return draw(hnp.arrays(np.intp, shape, elements=st.integers(low, high)))


@DIFFERENTIAL
@given(array=arrays(dtypes, nonempty_shapes, bound=100), data=st.data())
def test_integer_array_index_reads_a_copy(snp_any: ModuleType, array: np.ndarray, data) -> None:
    axis = data.draw(st.integers(0, array.ndim - 1), label="axis")
    positions = data.draw(integer_index_arrays(array.shape[axis]), label="positions")

    def take_then_write(xp, a, p):
        index = (slice(None),) * axis + (p,)
        taken = a[index]
        taken[...] = 0  # a copy: the base must not change
        return a[index]

    check_same(snp_any, take_then_write, array, positions)


@DIFFERENTIAL
@given(array=arrays(dtypes, nonempty_shapes, bound=100), data=st.data())
def test_two_integer_arrays_broadcast_together(snp: ModuleType, array: np.ndarray, data) -> None:
    if array.ndim < 2:
        array = array.reshape((*array.shape, 1))
    rows = data.draw(integer_index_arrays(array.shape[0]), label="rows")
    columns = data.draw(integer_index_arrays(array.shape[1]), label="columns")
    check_same(snp, lambda xp, a, r, c: a[r, c], array, rows, columns)
    check_same(snp, lambda xp, a, r: a[r, 1:], array, rows)


@DIFFERENTIAL
@given(array=arrays(dtypes, shapes, bound=100), data=st.data())
def test_boolean_mask_index_reads_a_copy(snp_any: ModuleType, array: np.ndarray, data) -> None:
    mask = data.draw(arrays(np.dtype(bool), array.shape), label="mask")

    def mask_then_write(xp, a, m):
        selected = a[m]
        selected[...] = 0  # a copy: the base must not change
        return a[m]

    check_same(snp_any, mask_then_write, array, mask)


@DIFFERENTIAL
@given(array=arrays(dtypes, nonempty_shapes, bound=100), data=st.data())
def test_boolean_mask_along_first_axis(snp: ModuleType, array: np.ndarray, data) -> None:
    length = data.draw(st.sampled_from([array.shape[0], array.shape[0] + 1]), label="length")
    mask = data.draw(arrays(np.dtype(bool), (length,)), label="mask")
    check_same(snp, lambda xp, a, m: a[m], array, mask)
    check_same(snp, lambda xp, a, m: a[m, ...], array, mask)


@DIFFERENTIAL
@given(
    array=arrays(dtypes, nonempty_shapes, bound=100),
    value=st.integers(0, 100),
    data=st.data(),
)
def test_setitem_through_advanced_indices(
    snp_any: ModuleType, array: np.ndarray, value: int, data
) -> None:
    positions = data.draw(integer_index_arrays(array.shape[0]), label="positions")
    mask = data.draw(arrays(np.dtype(bool), array.shape), label="mask")

    def assign(xp, a, p, m):
        a[p] = value
        a[m] = a[m] // 2 if a.dtype.kind in "iuf" else a[m]
        return a

    check_same(snp_any, assign, array, positions, mask)


def test_augmented_assignment_with_repeated_indices_applies_once(snp: ModuleType) -> None:
    def add_at_repeated(xp, a):
        a[[0, 0, 2, -1, -1, -1]] += 5
        return a

    check_same(snp, add_at_repeated, np.arange(6))


def test_python_lists_as_indices(snp_any: ModuleType) -> None:
    array = np.arange(20).reshape(4, 5)
    check_same(snp_any, lambda xp, a: a[[3, 0, -1]], array)
    check_same(snp_any, lambda xp, a: a[[True, False, True, False]], array)
    check_same(snp_any, lambda xp, a: a[[0, 1], [4, 3]], array)
    check_same(snp_any, lambda xp, a: a[1:, [0, 2]], array)


def test_advanced_index_with_lazy_index_from_a_computation(snp: ModuleType) -> None:
    check_same(snp, lambda xp, a: a[a > a.mean()], np.array([5.0, -1.0, 3.0, 8.0, 0.5]))
    check_same(snp, lambda xp, a: a[(a % 3).astype(np.intp)], np.arange(9))


@pytest.mark.parametrize(
    "index",
    [
        (Ellipsis, 1),
        (1, Ellipsis, None),
        (None, slice(None, None, -2), Ellipsis),
        (slice(-1, -5, -1), -2),
        (slice(10, -10, -3),),
        (-1, -1, -1),
        (),
    ],
    ids=repr,
)
def test_hand_picked_basic_indices(snp_any: ModuleType, index) -> None:
    check_same(snp_any, lambda xp, a: a[index], np.arange(60).reshape(3, 4, 5))


# Values that are not numbers, which NumPy converts to the array's dtype as it stores them
OBJECT_VALUES = [
    None, decimal.Decimal("1.1"), fractions.Fraction(1, 3), np.longdouble(0.1), np.str_("4.5"), b"6.5", b"x",
    [None, 2, decimal.Decimal("2.5")], np.array([fractions.Fraction(1, 2)] * 3, dtype=object),
]
OBJECT_KEYS = [3, -1, slice(1, 4), slice(None), [0, 5, 2], (slice(None, 4), None)]
STORING_DTYPES = [np.float64, np.float32, np.complex128, np.int64, np.bool_]


def stored_objects(xp: ModuleType, size: int) -> list[tuple]:
    """``a[key] = value`` of each value that is not a number: ``prices[3] = None`` is NaN
    (Shoal raised an internal BytecodeError at the next read), or NumPy's error."""

    def store(dtype, key, value):
        a = (xp.arange(size) * 1).astype(dtype)
        a[key] = value
        return xp.concatenate((a[:6], a[-2:]))

    results = []
    for dtype in STORING_DTYPES:
        for key in OBJECT_KEYS:
            for value in OBJECT_VALUES:
                if isinstance(key, int) and np.ndim(value):
                    continue  # a sequence into one element: NumPy's error, another matter
                results.append(summarized(lambda dtype=dtype, key=key, value=value: store(dtype, key, value)))
    prices = xp.linspace(1.0, 2.0, size)
    prices[3] = None
    results.append(summarized(lambda: xp.isnan(prices).sum()))
    return results


def test_storing_none_and_other_objects_converts_as_numpy(snp_any: ModuleType) -> None:
    assert stored_objects(snp_any, 40) == stored_objects(np, 40)


def test_storing_none_and_other_objects_at_default_settings(snp_default: ModuleType) -> None:
    assert stored_objects(snp_default, 600_000) == stored_objects(np, 600_000)


@pytest.mark.parametrize(
    "index",
    [lambda a: a[[]], lambda a: a[[], 1:], lambda a: a[:, []], lambda a: a[[[]]]],
    ids=["list", "rows", "columns", "nested"],
)
def test_an_empty_list_indexes_as_integers(snp_any: ModuleType, index) -> None:
    """NumPy reads an empty list in an index as ``intp`` (it is float64 as an array: that raised
    ``IndexError``); a write through it changes nothing."""
    check_same(snp_any, lambda xp, a: index(a), np.arange(12.0).reshape(3, 4))

    def write(xp, a):
        a[[]] = 5.0
        return a

    check_same(snp_any, write, np.arange(12.0).reshape(3, 4))

"""ndarray attributes: shape, dtype, ndim, size, strides, T, flat and NumPy's base semantics."""

from __future__ import annotations

from types import ModuleType

import hypothesis.extra.numpy as hnp
import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from numpy_fixtures import DIFFERENTIAL, arrays, assert_same, check_same, dtypes, shapes


def attributes(array) -> tuple:
    return (
        array.shape, array.dtype, array.ndim, array.size, array.itemsize, array.nbytes,
        array.strides, array.T.shape, array.T.strides,
    )  # fmt: skip


@DIFFERENTIAL
@given(array=arrays(dtypes, shapes, bound=100), data=st.data())
def test_attributes_of_views_match_numpy(snp_any: ModuleType, array: np.ndarray, data) -> None:
    index = data.draw(hnp.basic_indices(array.shape, min_dims=0, allow_newaxis=True))
    array = array.copy()  # C-contiguous, as Shoal's copy is
    expected_view = array[index]
    view = snp_any.array(array)[index]
    if isinstance(expected_view, np.ndarray) and expected_view.size:
        assert attributes(view) == attributes(expected_view)
    else:
        assert (view.shape, view.dtype) == (expected_view.shape, expected_view.dtype)
    if array.ndim:
        assert len(view if np.ndim(expected_view) else array) == len(
            expected_view if np.ndim(expected_view) else array
        )


def test_base_follows_numpy(snp: ModuleType) -> None:
    owner = snp.arange(12.0)
    assert owner.base is None
    assert owner[::2].base is owner
    assert owner[::2][1:].base is owner  # a view of a view points at the owner
    assert owner.reshape(3, 4).base is owner
    assert owner.reshape(3, 4).T.base is owner
    assert owner.copy().base is None
    assert (owner + 1).base is None
    assert owner[[0, 1]].base is None or owner[[0, 1]].base is not owner


def test_flat_reads_and_writes(snp: ModuleType) -> None:
    def program(xp, a):
        first = a.flat[5]
        some = a.flat[2:9:3]
        a.flat[::4] = -1
        a.T.flat[1] = -2  # the transpose is not contiguous: flat order is the view's
        listed = list(a[1].flat)
        return first, some, listed, a

    check_same(snp, program, np.arange(12, dtype=np.int32).reshape(3, 4))


def test_flat_assignment_broadcasts(snp: ModuleType) -> None:
    def program(xp, a):
        a.flat = [7, 8, 9]
        return a

    check_same(snp, program, np.zeros((2, 4)))


def test_transpose_attribute(snp_any: ModuleType) -> None:
    array = np.arange(24).reshape(2, 3, 4)
    check_same(snp_any, lambda xp, a: a.T, array)
    check_same(snp_any, lambda xp, a: a.T[1:, ::-1].T, array)


def test_item_and_tolist_give_python_values(snp: ModuleType) -> None:
    for dtype in ("bool", "int8", "uint64", "float32", "complex128"):
        array = np.arange(6).astype(dtype).reshape(2, 3)
        lazy = snp.array(array)
        assert_same(lazy.tolist(), array.tolist())
        assert_same(lazy.item(4), array.item(4))
        assert_same(lazy[1, 2].item(), array[1, 2].item())


def test_membership_is_numpys_any_of_equals(snp: ModuleType) -> None:
    """``value in a`` is NumPy's ``(a == value).any()`` for every shape (iterating the rows of a
    2-D array would compare rows and raise)."""
    values = np.arange(24.0).reshape(2, 3, 4)
    lazy = snp.array(values)
    for probe in (5.0, -1, 23, np.float32(7.0), np.arange(4.0), np.array([0.0, 1.0, 2.0, 4.0])):
        assert (probe in lazy) is (probe in values)
    with np.testing.assert_raises(ValueError):
        np.arange(3.0) in values  # noqa: B015 (the shapes do not broadcast: NumPy's error)
    with np.testing.assert_raises(ValueError):
        np.arange(3.0) in lazy  # noqa: B015


def test_data_and_ctypes_are_numpys_of_the_contents(snp: ModuleType) -> None:
    values = np.arange(12.0).reshape(3, 4)
    lazy = snp.array(values) * 1
    assert bytes(lazy.data) == bytes(values.data)
    assert list(lazy.ctypes.shape) == [3, 4]


def test_an_unknown_attribute_raises_attribute_error(snp: ModuleType) -> None:
    lazy = snp.arange(10.0)
    for name in ("no_such_attribute", "__no_such_dunder__"):
        with np.testing.assert_raises(AttributeError):
            getattr(lazy, name)
        assert not hasattr(lazy, name)


def test_flags_print_as_numpys(snp: ModuleType) -> None:
    values = np.arange(24.0).reshape(4, 6)
    lazy = snp.array(values) * 1
    expected = values * 1
    for view in (lambda a: a, lambda a: a.T, lambda a: a[:, ::2], lambda a: a[1:3]):
        assert str(view(lazy).flags) == str(view(expected).flags)
        assert repr(view(lazy).flags) == repr(view(expected).flags)


def test_setting_the_dtype_reads_the_memory_anew(snp: ModuleType) -> None:
    """``a.dtype = t`` reinterprets the array's memory, as NumPy's ``view(t)`` would."""

    def program(xp):
        values = xp.arange(12.0) * 1
        values.dtype = np.int64
        halves = xp.arange(12.0) * 1
        halves.dtype = np.float32
        transposed = (xp.arange(12.0) * 1).reshape(3, 4).T
        try:
            transposed.dtype = np.float32
            refused = None
        except ValueError as error:
            refused = str(error)
        return [np.asarray(values).tolist(), str(values.dtype), halves.shape, refused]

    assert program(snp) == program(np)

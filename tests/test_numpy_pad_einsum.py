"""``pad``, ``einsum``, ``take_along_axis``, ``nonzero``, ``argwhere``, ``flatnonzero`` and
``searchsorted`` on lazy arrays: NumPy's results and errors, and no fallback (a
``ShoalFallbackWarning`` fails the test)."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy_fixtures import (
    DIFFERENTIAL,
    NUMERIC_DTYPES,
    arrays,
    check_same,
    dtypes,
    needs_runtime,
    nonempty_shapes,
    shapes,
)

small = arrays(dtypes, shapes, bound=100)
numeric = st.sampled_from(NUMERIC_DTYPES)
widths = st.integers(0, 4) | st.tuples(st.integers(0, 4), st.integers(0, 4)) | st.lists(
    st.tuples(st.integers(0, 3), st.integers(0, 3)), min_size=1, max_size=3
)


@DIFFERENTIAL
@given(value=small, width=widths, mode=st.sampled_from(["constant", "edge", "wrap", "reflect", "symmetric"]))
def test_pad(snp: ModuleType, value: np.ndarray, width, mode: str) -> None:
    check_same(snp, lambda xp, v: xp.pad(v, width, mode=mode), value)


@DIFFERENTIAL
@given(value=arrays(numeric, nonempty_shapes, bound=100), width=widths, constants=st.integers(-3, 3) | st.tuples(st.floats(-2, 2), st.integers(0, 9)))
def test_pad_constants_cast_and_fill_corners_in_numpys_order(snp: ModuleType, value: np.ndarray, width, constants) -> None:
    check_same(snp, lambda xp, v: xp.pad(v, width, constant_values=constants), value)


@pytest.mark.parametrize("mode", ["constant", "edge", "wrap", "reflect", "symmetric"])
def test_pad_of_an_empty_array_along_its_other_axes(snp: ModuleType, mode: str) -> None:
    check_same(snp, lambda xp, v: xp.pad(v, ((0, 1), (0, 0)), mode=mode), np.zeros((1, 0), bool))
    check_same(snp, lambda xp, v: xp.pad(v, ((2, 1), (0, 0), (1, 0)), mode=mode), np.zeros((3, 0, 2)))


@pytest.mark.parametrize(
    "call",
    [
        lambda xp, v: xp.pad(v, -1),
        lambda xp, v: xp.pad(v, ((1, 2), (3, 4), (5, 6))),
        lambda xp, v: xp.pad(v, 1, mode="nonsense"),
        lambda xp, v: xp.pad(v, 1, mode="edge", constant_values=3),
        lambda xp, v: xp.pad(v[:0], 1, mode="wrap"),
        lambda xp, v: xp.pad(v, 1.5),
    ],
)
def test_pad_errors_are_numpys(snp: ModuleType, call) -> None:
    assert check_same(snp, call, np.arange(12.0).reshape(3, 4)) is not None


# (subscripts, operand shapes): products, transposes, traces, sums, batched and broadcast forms.
EINSUM_FORMS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ij->ji", [(3, 4)]),
    ("ij", [(3, 4)]),
    ("ji", [(3, 4)]),
    ("ii", [(4, 4)]),
    ("ii->i", [(4, 4)]),
    ("iij->j", [(3, 3, 2)]),
    ("ij->", [(3, 4)]),
    ("ij->j", [(3, 4)]),
    ("i,i", [(5,), (5,)]),
    ("i,i->i", [(5,), (5,)]),
    ("i,j->ij", [(3,), (4,)]),
    ("i,j", [(3,), (4,)]),
    ("ij,j->i", [(3, 4), (4,)]),
    ("ij,ij->", [(3, 4), (3, 4)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (1, 4, 5)]),
    ("...ij,...jk", [(3, 4), (2, 4, 5)]),
    ("...i->...", [(2, 3, 4)]),
    ("i...->...", [(2, 3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("ij,kj->ik", [(3, 1), (2, 4)]),
    ("ij,jk->ik", [(0, 4), (4, 5)]),
    ("ij,jk->ik", [(3, 0), (0, 5)]),
    ("i,i", [(0,), (0,)]),
    ("", [()]),
    (",->", [(), ()]),
    ("i,->i", [(3,), ()]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
]


@DIFFERENTIAL
@given(form=st.sampled_from(EINSUM_FORMS), dtype=numeric | st.just(np.dtype(bool)), other=numeric, data=st.data())
def test_einsum(snp: ModuleType, form, dtype, other, data) -> None:
    subscripts, operand_shapes = form
    operands = [data.draw(arrays(dtype if i == 0 else other, shape, bound=9)) for i, shape in enumerate(operand_shapes)]
    tolerance = 1e-4 if any(o.dtype in (np.float32, np.complex64) for o in operands) else 1e-10
    check_same(snp, lambda xp, *vs: xp.einsum(subscripts, *vs), *operands, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize(
    ("subscripts", "operand_shapes"),
    [
        ("ij,jk->ik", [(3, 4), (5, 6)]),
        ("ij,jk->ik", [(3, 4)]),
        ("ij->k", [(3, 4)]),
        ("ijk", [(3, 4)]),
        ("ii", [(3, 4)]),
        ("ij->ii", [(3, 4)]),
        ("i$j", [(3, 4)]),
        ("...ij,...jk->...ik", [(2, 3, 4), (3, 4, 5)]),
    ],
)
def test_einsum_errors_are_numpys(snp: ModuleType, subscripts: str, operand_shapes) -> None:
    operands = [np.ones(shape) for shape in operand_shapes]
    assert check_same(snp, lambda xp, *vs: xp.einsum(subscripts, *vs), *operands) is not None


def test_einsum_of_lazy_operands_stays_lazy(snp: ModuleType) -> None:
    needs_runtime()
    a, b = snp.arange(12.0).reshape(3, 4), snp.arange(20.0).reshape(4, 5)
    result = snp.einsum("ij,jk->ik", a, b)
    assert isinstance(result, snp.ndarray)
    np.testing.assert_allclose(np.asarray(result), np.arange(12.0).reshape(3, 4) @ np.arange(20.0).reshape(4, 5))


@DIFFERENTIAL
@given(value=arrays(numeric, nonempty_shapes, bound=100), axis=st.integers(-3, 2) | st.none(), data=st.data())
def test_take_along_axis(snp: ModuleType, value: np.ndarray, axis, data) -> None:
    if axis is None:
        indices = data.draw(arrays(np.dtype(np.intp), st.tuples(st.integers(0, 6)), bound=value.size))
    else:
        indices = data.draw(arrays(np.dtype(np.intp), st.just(value.shape), bound=4))
    check_same(snp, lambda xp, v, i: xp.take_along_axis(v, i, axis=axis), value, indices)


@DIFFERENTIAL
@given(value=small)
def test_nonzero_and_argwhere(snp: ModuleType, value: np.ndarray) -> None:
    check_same(snp, lambda xp, v: xp.nonzero(v), value)
    check_same(snp, lambda xp, v: v.nonzero(), value)
    check_same(snp, lambda xp, v: xp.argwhere(v), value)
    check_same(snp, lambda xp, v: xp.flatnonzero(v), value)
    check_same(snp, lambda xp, v: xp.nonzero(v * 2 > 3), value)


@DIFFERENTIAL
@given(
    a=arrays(numeric, st.tuples(st.integers(0, 8)), bound=20),
    v=arrays(numeric, shapes, bound=20),
    side=st.sampled_from(["left", "right"]),
    sorted_by=st.sampled_from(["sort", "sorter", "unsorted"]),
)
def test_searchsorted(snp: ModuleType, a: np.ndarray, v: np.ndarray, side: str, sorted_by: str) -> None:
    if sorted_by == "sort":
        a = np.sort(a)
        check_same(snp, lambda xp, x, y: xp.searchsorted(x, y, side=side), a, v)
        check_same(snp, lambda xp, x, y: x.searchsorted(y, side), a, v)
    elif sorted_by == "sorter":
        check_same(snp, lambda xp, x, y, s: xp.searchsorted(x, y, side, s), a, v, np.argsort(a, kind="stable"))
    else:
        check_same(snp, lambda xp, x, y: xp.searchsorted(x, y, side="middle"), a, v)


def test_searchsorted_of_a_scalar_and_a_two_dimensional_sorted_array(snp: ModuleType) -> None:
    check_same(snp, lambda xp, x: xp.searchsorted(x, 3.5), np.arange(8.0))
    assert check_same(snp, lambda xp, x: xp.searchsorted(x, 3.5), np.arange(8.0).reshape(2, 4)) is not None

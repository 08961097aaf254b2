"""Shape manipulation, joining, casting and matrix products: Shoal against NumPy."""

from __future__ import annotations

import math
from types import ModuleType

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy_fixtures import (
    ALL_DTYPES,
    DIFFERENTIAL,
    INTEGER_DTYPES,
    arrays,
    check_same,
    dtypes,
    shapes,
)

small_shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=6)


@st.composite
def reshape_targets(draw, shape: tuple[int, ...]):
    """A shape with the same size (sometimes with -1), or any shape (NumPy's error then)."""
    size = math.prod(shape)
    factors = [d for d in range(1, size + 1) if size % d == 0] or [1]
    first = draw(st.sampled_from(factors))
    same_size = draw(
        st.sampled_from(
            [
                (size,),
                (-1,),
                (first, size // first),
                (first, -1),
                (1, size, 1),
                (size // first, 1, first),
            ]
        )
    )
    return draw(st.just(same_size) | small_shapes)


@DIFFERENTIAL
@given(array=arrays(dtypes, shapes, bound=100), data=st.data())
def test_reshape_matches_numpy(snp_any: ModuleType, array: np.ndarray, data) -> None:
    target = data.draw(reshape_targets(array.shape), label="target")
    check_same(snp_any, lambda xp, a: a.reshape(target), array)
    check_same(snp_any, lambda xp, a: xp.reshape(a[..., ::-1], target), array)


@DIFFERENTIAL
@given(array=arrays(dtypes, shapes, bound=100), data=st.data())
def test_axis_movers_match_numpy(snp_any: ModuleType, array: np.ndarray, data) -> None:
    ndim = array.ndim
    permutation = data.draw(st.permutations(range(ndim)) | st.lists(st.integers(-ndim - 1, ndim)))
    first, second = data.draw(st.tuples(st.integers(-ndim - 1, ndim), st.integers(-ndim - 1, ndim)))
    new_axis = data.draw(st.integers(-ndim - 2, ndim + 1), label="new_axis")
    check_same(snp_any, lambda xp, a: a.T, array)
    check_same(snp_any, lambda xp, a: xp.transpose(a, permutation), array)
    check_same(snp_any, lambda xp, a: a.transpose(*permutation), array)
    check_same(snp_any, lambda xp, a: xp.swapaxes(a, first, second), array)
    check_same(snp_any, lambda xp, a: xp.expand_dims(a, new_axis), array)
    check_same(snp_any, lambda xp, a: a.ravel(), array)
    check_same(snp_any, lambda xp, a: a.T.ravel(), array)
    check_same(snp_any, lambda xp, a: a.T.flatten(), array)


@DIFFERENTIAL
@given(
    array=arrays(dtypes, hnp.array_shapes(min_dims=0, max_dims=4, min_side=1, max_side=2)),
    data=st.data(),
)
def test_squeeze_matches_numpy(snp: ModuleType, array: np.ndarray, data) -> None:
    axis = data.draw(st.none() | st.integers(-array.ndim - 1, array.ndim), label="axis")
    check_same(snp, lambda xp, a: xp.squeeze(a, axis=axis), array)
    check_same(snp, lambda xp, a: a.squeeze(), array)


@DIFFERENTIAL
@given(array=arrays(dtypes, shapes, bound=100), data=st.data())
def test_broadcast_to_matches_numpy(snp: ModuleType, array: np.ndarray, data) -> None:
    target = data.draw(
        hnp.broadcastable_shapes(array.shape, min_side=0).map(
            lambda other: np.broadcast_shapes(other, array.shape)
        )
        | small_shapes,
        label="target",
    )
    check_same(snp, lambda xp, a: xp.broadcast_to(a, target), array)


@st.composite
def joinable(draw, stack: bool):
    """1-3 arrays that join along ``axis`` (same shape for stack), sometimes not."""
    shape = list(draw(hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=4)))
    axis = draw(st.integers(-len(shape), len(shape) - (0 if stack else 1)))
    parts = []
    for _ in range(draw(st.integers(1, 3))):
        part_shape = list(shape)
        if not stack and axis < len(shape):
            part_shape[axis] = draw(st.integers(0, 3))
        if draw(st.integers(0, 9)) == 0:
            part_shape = list(draw(small_shapes))
        parts.append(draw(arrays(dtypes, tuple(part_shape), bound=100)))
    return parts, draw(st.just(axis) | st.none()) if not stack else axis


@DIFFERENTIAL
@given(case=joinable(stack=False))
def test_concatenate_matches_numpy(snp_any: ModuleType, case) -> None:
    parts, axis = case
    check_same(snp_any, lambda xp, *p: xp.concatenate(p, axis=axis), *parts)


@DIFFERENTIAL
@given(case=joinable(stack=True))
def test_stack_matches_numpy(snp: ModuleType, case) -> None:
    parts, axis = case
    check_same(snp, lambda xp, *p: xp.stack(p, axis=axis), *parts)


@DIFFERENTIAL
@given(array=arrays(dtypes, shapes, bound=100), data=st.data())
def test_roll_matches_numpy(snp: ModuleType, array: np.ndarray, data) -> None:
    ndim = array.ndim
    shift = data.draw(st.integers(-7, 7), label="shift")
    axis = data.draw(st.none() | st.integers(-ndim, ndim - 1) if ndim else st.none(), label="axis")
    check_same(snp, lambda xp, a: xp.roll(a, shift, axis=axis), array)
    if ndim >= 2:
        check_same(snp, lambda xp, a: xp.roll(a, (shift, 1), axis=(0, -1)), array)


@DIFFERENTIAL
@given(
    source=st.sampled_from(ALL_DTYPES),
    target=st.sampled_from(ALL_DTYPES),
    shape=shapes,
    casting=st.sampled_from(["unsafe", "same_kind", "safe"]),
    data=st.data(),
)
def test_astype_matches_numpy(snp_any: ModuleType, source, target, shape, casting, data) -> None:
    # Finite, non-negative, in-range values: other float-to-integer casts are undefined in C.
    array = np.abs(data.draw(arrays(source, shape, bound=100, finite=True))).astype(source)
    check_same(snp_any, lambda xp, a: a.astype(target, casting=casting), array)
    check_same(snp_any, lambda xp, a: a[::-1].astype(target), array)


@st.composite
def matmul_operands(draw):
    """Two arrays of a numeric dtype whose shapes multiply (or, sometimes, do not)."""
    m, n, k, batch = (draw(st.integers(1, 4)) for _ in range(4))
    left_shape, right_shape = draw(
        st.sampled_from(
            [((n,), (n,)), ((m, n), (n,)), ((n,), (n, k)), ((m, n), (n, k)), ((batch, m, n), (n, k)),
             ((batch, m, n), (batch, n, k)), ((1, m, n), (batch, n, k)), ((m, n), (n + 1, k))]
        )
    )  # fmt: skip
    dtype = draw(st.sampled_from((*INTEGER_DTYPES, np.dtype("float32"), np.dtype("float64"))))
    other = draw(st.just(dtype) | dtypes)
    return draw(arrays(dtype, left_shape, bound=10)), draw(arrays(other, right_shape, bound=10))


@DIFFERENTIAL
@given(operands=matmul_operands())
def test_matrix_products_match_numpy(snp_any: ModuleType, operands) -> None:
    check_same(snp_any, lambda xp, a, b: a @ b, *operands, atol=1e-3)
    check_same(snp_any, lambda xp, a, b: xp.matmul(a, b), *operands, atol=1e-3)
    check_same(snp_any, lambda xp, a, b: xp.dot(a, b), *operands, atol=1e-3)
    check_same(snp_any, lambda xp, a, b: a.dot(b), *operands, atol=1e-3)


def test_matmul_in_place_and_with_views(snp: ModuleType) -> None:
    def program(xp, a, b):
        a @= b
        return a, a.T @ b[::-1], xp.dot(a[:, 0], b[0])

    square = np.arange(9.0).reshape(3, 3)
    check_same(snp, program, square, square.T / 3)


def test_a_numpy_operand_times_a_lazy_matrix(snp: ModuleType) -> None:
    """``v @ a`` with ``v`` NumPy's reaches the lazy class through ``np.matmul``'s override."""

    def program(xp, a, b):
        v = np.asarray(a[0])
        return v @ b, v @ b[:, ::-1], np.matmul(np.asarray(a), b), np.matmul(v, b)

    check_same(snp, program, np.arange(12.0).reshape(3, 4), np.arange(8.0).reshape(4, 2))
    error = check_same(snp, lambda xp, a, b: np.asarray(a) @ b, np.ones(3), np.ones((4, 2)))
    assert isinstance(error, ValueError)
    error = check_same(snp, lambda xp, a, b: np.asarray(a) @ b[0, 0], np.ones(3), np.ones((4, 2)))
    assert isinstance(error, ValueError)


def test_product_dtypes_are_numpys_for_every_pair_and_a_refused_pair_raises_every_time(snp_recorded: ModuleType) -> None:
    """The result dtype of ``matmul`` and ``dot`` is found on probes once per pair of dtypes and
    ranks (``shoal/numpy/_linalg.py``); NumPy's refusal is never remembered as an answer."""
    pairs = [(x, y) for x in ALL_DTYPES for y in ALL_DTYPES]
    for first, second in pairs:
        for _ in range(2):  # the second time from what the first found
            check_same(snp_recorded, lambda xp, a, b: (xp.matmul(a, b), xp.dot(a, b), a @ b[:, 0]), np.ones((3, 2), first), np.ones((2, 4), second))
    for _ in range(2):
        check_same(snp_recorded, lambda xp, a, b: xp.matmul(a, b), np.ones((2, 2)), np.array([["a", "b"], ["c", "d"]]))


@DIFFERENTIAL
@given(array=arrays(dtypes, shapes, bound=100), data=st.data())
def test_reshape_in_fortran_order_views_as_numpy_does(snp_any: ModuleType, array: np.ndarray, data) -> None:
    """Orders ``F`` and ``A``: NumPy's values, and a view exactly where NumPy's is one (a write
    through the result reaches the input; these went through the fallback, always a copy)."""
    target = data.draw(reshape_targets(array.shape), label="target")
    order = data.draw(st.sampled_from("FA"), label="order")
    source = data.draw(st.sampled_from(["itself", "transposed", "reversed"]), label="source")

    def reshape_and_write(xp, a):
        viewed = {"itself": a, "transposed": a.T, "reversed": a[..., ::-1]}[source]
        result = xp.reshape(viewed, target, order=order)
        if result.ndim and result.size:
            result[(0,) * result.ndim] = 42
        return result

    check_same(snp_any, reshape_and_write, array)


@DIFFERENTIAL
@given(array=arrays(dtypes, shapes, bound=100), transposed=st.booleans(), cast=st.booleans(), order=st.sampled_from("FC"))
def test_asfortranarray_and_ascontiguousarray_return_a_view_where_numpy_does(
    snp_any: ModuleType, array: np.ndarray, transposed: bool, cast: bool, order: str
) -> None:
    def fortran_and_write(xp, a):
        function = xp.asfortranarray if order == "F" else xp.ascontiguousarray
        result = function(a.T if transposed else a, dtype=np.float64 if cast else None)
        if result.size:  # a 0-d array gives a view of one dimension
            result[(0,) * result.ndim] = 42
        return result

    check_same(snp_any, fortran_and_write, array)


MEMORY_ORDER_VIEWS = {
    "transposed": lambda a: a.T,
    "fortran": lambda a: np.asfortranarray(a),
    "fortran_columns": lambda a: np.asfortranarray(a)[:, 1:],
    "permuted": lambda a: a.reshape(4, 5, 6).transpose(1, 2, 0),
    "reversed_and_permuted": lambda a: a.reshape(4, 5, 6)[:, ::-1].transpose(2, 0, 1),
    "strided_and_permuted": lambda a: a.reshape(4, 5, 6)[::2, :, ::3].transpose(2, 1, 0),
    "broadcast_and_permuted": lambda a: np.broadcast_to(a.reshape(4, 5, 6)[:, :1], (4, 5, 6)).transpose(1, 0, 2),
}
MEMORY_ORDER_CALLS = {
    "flatten": lambda v, order: v.flatten(order=order),
    "ravel": lambda v, order: v.ravel(order=order),
    "copy": lambda v, order: v.copy(order=order).ravel(order="K"),
    "astype": lambda v, order: v.astype(np.float32, order=order).ravel(order="K"),
}


@pytest.mark.parametrize("order", ["C", "F", "A", "K"])
@pytest.mark.parametrize("call", sorted(MEMORY_ORDER_CALLS))
@pytest.mark.parametrize("view", sorted(MEMORY_ORDER_VIEWS))
def test_flatten_ravel_and_copies_read_in_numpys_order(snp: ModuleType, view: str, call: str, order: str) -> None:
    """Order ``K`` is the order of memory (a copy in ``K`` keeps it, as ``ravel(order="K")`` of
    it shows) and ``A`` Fortran's for a Fortran-contiguous array: not C order."""
    make, take = MEMORY_ORDER_VIEWS[view], MEMORY_ORDER_CALLS[call]
    check_same(snp, lambda xp, a: take(make(a), order), np.arange(120.0).reshape(20, 6))


def test_concatenate_with_out_and_dtype_fails_like_numpy(snp_any: ModuleType) -> None:
    error = check_same(
        snp_any, lambda xp, a, b, out: xp.concatenate([a, b], out=out, dtype=float), np.arange(12).reshape(3, 4), np.ones((2, 4)), np.zeros((5, 4))
    )
    assert isinstance(error, TypeError)

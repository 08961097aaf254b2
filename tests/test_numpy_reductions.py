"""Reductions and accumulations: Shoal against NumPy with axis, keepdims, dtype and out."""

from __future__ import annotations

import re
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy_fixtures import ALL_DTYPES, DIFFERENTIAL, arrays, check_same, shapes

REDUCTIONS = ("sum", "prod", "min", "max", "mean", "std", "var", "any", "all")
WITH_DTYPE = ("sum", "prod", "mean", "std", "var", "cumsum", "cumprod")
ARG_REDUCTIONS = ("argmin", "argmax")
ACCUMULATIONS = ("cumsum", "cumprod")
REDUCING_UFUNCS = ("add", "multiply", "maximum", "minimum", "logical_and", "logical_or")
# Floats are bounded so that sums over a few hundred elements keep a meaningful tolerance.
FLOAT_BOUND = 100

# Another summation order may differ from NumPy's pairwise sum by a few ulps per element.
REDUCTION_RTOL = {np.dtype("float32"): 1e-4, np.dtype("complex64"): 1e-4}


def tolerance(array: np.ndarray) -> dict[str, float]:
    """rtol/atol for reducing ``array``: scaled by its size and the bound on its values."""
    if array.dtype.kind not in "fc":
        return {"rtol": 1e-10, "atol": 0.0}
    eps = float(np.finfo(array.dtype).eps)
    return {
        "rtol": REDUCTION_RTOL.get(array.dtype, 1e-10),
        "atol": 4 * eps * max(array.size, 1) * FLOAT_BOUND,
    }


def bounded_arrays(shape_strategy=shapes) -> st.SearchStrategy:
    """Arrays of any dtype; floating values within ``FLOAT_BOUND``, integers unbounded."""
    return st.sampled_from(ALL_DTYPES).flatmap(
        lambda dtype: arrays(
            dtype, shape_strategy, bound=FLOAT_BOUND if dtype.kind in "fc" else None, finite=True
        )
    )


@st.composite
def axes(draw, ndim: int, allow_tuple: bool = True):
    """None, an axis (negative ones too, sometimes out of range), or a tuple of distinct axes."""
    choices = [st.none(), st.integers(-ndim - 1, ndim)]
    if allow_tuple and ndim > 0:
        choices.append(st.lists(st.integers(-ndim, ndim - 1), min_size=1, max_size=ndim).map(tuple))
    return draw(st.one_of(*choices))


@DIFFERENTIAL
@given(
    name=st.sampled_from(REDUCTIONS),
    array=bounded_arrays(),
    keepdims=st.booleans(),
    as_method=st.booleans(),
    data=st.data(),
)
def test_reduction_matches_numpy(
    snp: ModuleType, name: str, array: np.ndarray, keepdims: bool, as_method: bool, data
) -> None:
    axis = data.draw(axes(array.ndim), label="axis")
    options = {"axis": axis, "keepdims": keepdims}
    if name in WITH_DTYPE:
        options["dtype"] = data.draw(st.none() | st.sampled_from(ALL_DTYPES), label="dtype")

    def reduce(xp, a):
        return getattr(a, name)(**options) if as_method else getattr(xp, name)(a, **options)

    check_same(snp, reduce, array, **tolerance(array))


@DIFFERENTIAL
@given(name=st.sampled_from(ARG_REDUCTIONS), array=bounded_arrays(), data=st.data())
def test_argmin_argmax_match_numpy(snp: ModuleType, name: str, array: np.ndarray, data) -> None:
    axis = data.draw(axes(array.ndim, allow_tuple=False), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    check_same(snp, lambda xp, a: getattr(xp, name)(a, axis=axis, keepdims=keepdims), array)


@DIFFERENTIAL
@given(name=st.sampled_from(ACCUMULATIONS), array=bounded_arrays(), data=st.data())
def test_accumulation_matches_numpy(snp: ModuleType, name: str, array: np.ndarray, data) -> None:
    axis = data.draw(axes(array.ndim, allow_tuple=False), label="axis")
    dtype = data.draw(st.none() | st.sampled_from(ALL_DTYPES), label="dtype")
    check_same(snp, lambda xp, a: getattr(xp, name)(a, axis=axis, dtype=dtype), array)
    check_same(snp, lambda xp, a: getattr(a, name)(axis=axis), array)


@DIFFERENTIAL
@given(name=st.sampled_from(REDUCING_UFUNCS), array=bounded_arrays(), data=st.data())
def test_ufunc_reduce_matches_numpy(snp: ModuleType, name: str, array: np.ndarray, data) -> None:
    axis = data.draw(st.just(0) | axes(array.ndim), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")

    def reduce(xp, a):
        return getattr(xp, name).reduce(a, axis=axis, keepdims=keepdims)

    check_same(snp, reduce, array, **tolerance(array))


@DIFFERENTIAL
@given(name=st.sampled_from(["maximum", "minimum", "fmax", "fmin"]), array=arrays(st.sampled_from(ALL_DTYPES), shapes), data=st.data())
def test_selecting_ufunc_reduce_from_an_initial_value_matches_numpy(snp_recorded: ModuleType, name: str, array: np.ndarray, data) -> None:
    """``initial`` (``np.nanmax(a, initial=x)`` reduces with ``np.fmax``), recorded: NaNs, empty
    axes (``initial`` everywhere), ``keepdims``; no fallback counted."""
    from shoal.numpy import _dispatch

    axis = data.draw(st.none() | axes(array.ndim), label="axis")
    keepdims = data.draw(st.booleans(), label="keepdims")
    initial = data.draw(st.sampled_from([-5, 0, 7, -1.5, float("nan")]), label="initial")
    before = sum(_dispatch.FALLBACKS.values())
    check_same(snp_recorded, lambda xp, a: getattr(xp, name).reduce(a, axis=axis, keepdims=keepdims, initial=initial), array)
    assert sum(_dispatch.FALLBACKS.values()) == before


@pytest.mark.parametrize("name", ["sum", "prod", "min", "max", "mean", "any", "all", "argmax"])
@pytest.mark.parametrize("axis", [0, 1])
def test_reduction_into_out(snp: ModuleType, name: str, axis: int) -> None:
    array = np.arange(1, 13, dtype=np.float64).reshape(3, 4) / 7
    out_dtype = np.intp if name == "argmax" else np.bool_ if name in ("any", "all") else np.float64

    def reduce_into(xp, a, out):
        result = getattr(xp, name)(a, axis=axis, out=out)
        assert result is out
        return out

    out = np.zeros(array.shape[1 - axis], out_dtype)
    check_same(snp, reduce_into, array, out)


def test_sum_into_out_of_another_dtype_casts(snp: ModuleType) -> None:
    def sum_into(xp, a, out):
        xp.sum(a, axis=0, out=out)
        return out

    check_same(snp, sum_into, np.arange(12.0).reshape(3, 4) * 1.5, np.zeros(4, np.int32))


def test_reduction_into_out_of_wrong_shape_fails_like_numpy(snp: ModuleType) -> None:
    error = check_same(
        snp, lambda xp, a, out: xp.sum(a, axis=0, out=out), np.ones((3, 4)), np.zeros(3)
    )
    assert isinstance(error, ValueError)


@pytest.mark.parametrize("name", ["sum", "prod", "min", "max", "mean", "argmin", "argmax"])
def test_nan_propagates_like_numpy(snp: ModuleType, name: str) -> None:
    array = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, -np.inf], [np.inf, 0.0, 2.0]])
    check_same(snp, lambda xp, a: getattr(xp, name)(a, axis=1), array)
    check_same(snp, lambda xp, a: getattr(xp, name)(a), array)


@pytest.mark.parametrize("name", ["min", "max", "argmin", "argmax"])
def test_empty_reductions_without_identity_fail_like_numpy(snp: ModuleType, name: str) -> None:
    error = check_same(snp, lambda xp, a: getattr(xp, name)(a), np.zeros((0, 3)))
    assert isinstance(error, ValueError)
    assert check_same(snp, lambda xp, a: getattr(xp, name)(a, axis=0), np.zeros((0, 3)))
    assert check_same(snp, lambda xp, a: getattr(xp, name)(a, axis=1), np.zeros((0, 3))) is None


@pytest.mark.parametrize("ddof", [0, 1, 2])
def test_std_and_var_with_ddof(snp: ModuleType, ddof: int) -> None:
    array = np.linspace(-3, 7, 24).reshape(4, 6)
    check_same(snp, lambda xp, a: xp.std(a, axis=0, ddof=ddof), array)
    check_same(snp, lambda xp, a: a.var(axis=1, ddof=ddof, keepdims=True), array)


def test_reduction_of_a_strided_view(snp: ModuleType) -> None:
    array = np.arange(60, dtype=np.int32).reshape(6, 10)
    check_same(snp, lambda xp, a: a[::-2, 1::3].sum(axis=0), array)
    check_same(snp, lambda xp, a: a.T[2:, ::-1].max(axis=1, keepdims=True), array)
    check_same(snp, lambda xp, a: a[:, 3].cumsum(), array)


@pytest.mark.parametrize("name", ACCUMULATIONS)
@pytest.mark.parametrize("axis", [None, 1])
def test_accumulation_of_numpy_data_into_a_lazy_out(snp: ModuleType, name: str, axis: int | None) -> None:
    """NumPy data accumulated into a Shoal ``out``: NumPy's call hands it back to Shoal (it
    recursed until the stack ran out)."""

    def accumulate_into(xp, a, out):
        result = getattr(xp, name)(np.asarray(a), axis=axis, out=out)  # NumPy's data on both sides
        assert result is out
        return out

    array = np.arange(1, 13, dtype=np.float64).reshape(3, 4) / 7
    check_same(snp, accumulate_into, array, np.zeros(12 if axis is None else (3, 4), np.float32))


@pytest.mark.parametrize(
    ("shape", "axis", "out_shape"), [((6,), None, (5,)), ((6,), 0, (2, 3)), ((2, 3), 1, (2, 4)), ((2, 3), 1, (3,))]
)
def test_accumulation_into_out_of_wrong_shape_fails_with_numpys_message(
    snp: ModuleType, shape: tuple[int, ...], axis: int | None, out_shape: tuple[int, ...]
) -> None:
    with pytest.raises(ValueError) as expected:
        np.cumsum(np.ones(shape), axis=axis, out=np.zeros(out_shape))
    for out in (snp.zeros(out_shape), np.zeros(out_shape)):
        with pytest.raises(ValueError, match=f"^{re.escape(str(expected.value))}$"):
            snp.cumsum(snp.ones(shape), axis=axis, out=out)

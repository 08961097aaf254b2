"""Elementwise functions: Shoal against NumPy over dtypes, shapes and broadcasting."""

from __future__ import annotations

import decimal
import fractions
import operator
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy_fixtures import (
    ALL_DTYPES,
    DIFFERENTIAL,
    INEXACT_DTYPES,
    arrays,
    check_same,
    count_reads,
    dtypes,
    shapes,
    summarized,
    two_shapes,
)

ARITHMETIC = (
    "add", "subtract", "multiply", "divide", "true_divide", "floor_divide", "remainder", "mod",
    "fmod", "power", "float_power", "maximum", "minimum", "fmax", "fmin", "copysign",
)  # fmt: skip
COMPARISON = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")
LOGICAL = ("logical_and", "logical_or", "logical_xor")
BITWISE = ("bitwise_and", "bitwise_or", "bitwise_xor")
SHIFTS = ("left_shift", "right_shift")
TRANSCENDENTAL_BINARY = ("arctan2", "hypot", "logaddexp", "logaddexp2")
EXACT_UNARY = (
    "negative", "positive", "absolute", "abs", "fabs", "sign", "square", "logical_not", "invert",
    "bitwise_not", "floor", "ceil", "trunc", "rint", "fix", "isnan", "isinf", "isfinite",
    "signbit", "conjugate", "real", "imag",
)  # fmt: skip
TRANSCENDENTAL_UNARY = (
    "sin", "cos", "tan", "arcsin", "arccos", "arctan", "sinh", "cosh", "tanh", "arcsinh",
    "arccosh", "arctanh", "deg2rad", "rad2deg", "degrees", "radians", "exp", "exp2", "expm1",
    "log", "log2", "log10", "log1p", "sqrt", "cbrt", "reciprocal",
)  # fmt: skip

BINARY_OPERATORS = (
    operator.add, operator.sub, operator.mul, operator.truediv, operator.floordiv, operator.mod,
    operator.pow, operator.and_, operator.or_, operator.xor, operator.lshift, operator.rshift,
    operator.eq, operator.ne, operator.lt, operator.le, operator.gt, operator.ge,
)  # fmt: skip
UNARY_OPERATORS = (operator.neg, operator.pos, operator.invert, operator.abs)

python_scalars = st.one_of(
    st.booleans(),
    st.integers(-300, 300),
    st.floats(-1e3, 1e3, allow_subnormal=False),
    st.complex_numbers(max_magnitude=1e3, allow_subnormal=False),
)


def calling(name: str):
    """``xp.<name>(*args)`` as an operation for ``check_same``."""
    return lambda xp, *args: getattr(xp, name)(*args)


def _non_negative_integers(values: np.ndarray) -> np.ndarray:
    """Integer exponents/shift counts NumPy accepts everywhere: 0 <= value < 70."""
    if values.dtype.kind in "iu":
        return np.remainder(values, 70).astype(values.dtype)
    return values


@DIFFERENTIAL
@given(
    name=st.sampled_from(ARITHMETIC + COMPARISON + LOGICAL + BITWISE + SHIFTS),
    pair=two_shapes.flatmap(
        lambda pair: st.tuples(arrays(dtypes, pair[0]), arrays(dtypes, pair[1]))
    ),
)
def test_binary_ufunc_matches_numpy(snp_any: ModuleType, name: str, pair) -> None:
    left, right = pair
    if name in (*SHIFTS, "power"):
        right = _non_negative_integers(right)
    check_same(snp_any, calling(name), left, right)


@DIFFERENTIAL
@given(
    name=st.sampled_from(TRANSCENDENTAL_BINARY),
    pair=two_shapes.flatmap(
        lambda pair: st.tuples(
            arrays(dtypes, pair[0], bound=50, finite=True),
            arrays(dtypes, pair[1], bound=50, finite=True),
        )
    ),
)
def test_transcendental_binary_ufunc_matches_numpy(snp: ModuleType, name: str, pair) -> None:
    check_same(snp, calling(name), *pair, atol=1e-6)


@DIFFERENTIAL
@given(name=st.sampled_from(EXACT_UNARY), array=arrays(dtypes, shapes))
def test_unary_ufunc_matches_numpy(snp_any: ModuleType, name: str, array: np.ndarray) -> None:
    check_same(snp_any, calling(name), array)


@DIFFERENTIAL
@given(
    name=st.sampled_from(TRANSCENDENTAL_UNARY),
    array=arrays(st.sampled_from(ALL_DTYPES), shapes, bound=20, finite=True),
)
def test_transcendental_unary_ufunc_matches_numpy(snp: ModuleType, name: str, array) -> None:
    check_same(snp, calling(name), array, atol=1e-6)


@DIFFERENTIAL
@given(
    op=st.sampled_from(BINARY_OPERATORS),
    pair=two_shapes.flatmap(
        lambda pair: st.tuples(arrays(dtypes, pair[0]), arrays(dtypes, pair[1]))
    ),
)
def test_binary_operator_matches_numpy(snp: ModuleType, op, pair) -> None:
    left, right = pair
    if op in (operator.pow, operator.lshift, operator.rshift):
        right = _non_negative_integers(right)
    check_same(snp, lambda xp, a, b: op(a, b), left, right)


@DIFFERENTIAL
@given(
    op=st.sampled_from(BINARY_OPERATORS),
    array=arrays(dtypes, shapes),
    scalar=python_scalars,
    scalar_on_left=st.booleans(),
)
def test_operator_with_python_scalar_matches_numpy(
    snp: ModuleType, op, array: np.ndarray, scalar, scalar_on_left: bool
) -> None:
    if op in (operator.pow, operator.lshift, operator.rshift) and scalar_on_left:
        array = _non_negative_integers(array)
    if scalar_on_left:
        check_same(snp, lambda xp, a: op(scalar, a), array)
    else:
        check_same(snp, lambda xp, a: op(a, scalar), array)


@DIFFERENTIAL
@given(op=st.sampled_from(UNARY_OPERATORS), array=arrays(dtypes, shapes))
def test_unary_operator_matches_numpy(snp: ModuleType, op, array: np.ndarray) -> None:
    check_same(snp, lambda xp, a: op(a), array)


@DIFFERENTIAL
@given(
    shapes3=st.tuples(shapes, shapes, shapes),
    data=st.data(),
)
def test_where_matches_numpy(snp_any: ModuleType, shapes3, data) -> None:
    condition = data.draw(arrays(np.dtype(bool), shapes3[0]))
    left = data.draw(arrays(dtypes, shapes3[1]))
    right = data.draw(arrays(dtypes, shapes3[2]))
    check_same(snp_any, lambda xp, c, a, b: xp.where(c, a, b), condition, left, right)


@pytest.mark.parametrize(
    "call",
    [
        lambda xp, a: xp.where(a > 0.5, a, None),
        lambda xp, a: xp.where(a > 0.5, None, a),
        lambda xp, a: xp.where(a > 0.5, None, None),
        lambda xp, a: xp.where(a > 0.5, a),
        lambda xp, a: xp.where(a > 0.5),
    ],
    ids=["y_none", "x_none", "both_none", "y_missing", "condition_only"],
)
def test_where_takes_none_as_a_value(snp_any: ModuleType, call) -> None:
    """``None`` for ``x`` or ``y`` is an element of an object array, not a missing argument."""
    check_same(snp_any, call, np.linspace(0, 1, 6))


@DIFFERENTIAL
@given(
    array=arrays(st.sampled_from(ALL_DTYPES[1:]), shapes, bound=1000, finite=True),
    low=st.integers(-50, 50),
    width=st.integers(0, 100),
    method=st.booleans(),
)
def test_clip_matches_numpy(
    snp: ModuleType, array: np.ndarray, low: int, width: int, method
) -> None:
    if method:
        check_same(snp, lambda xp, a: a.clip(low, low + width), array)
    else:
        check_same(snp, lambda xp, a: xp.clip(a, low, low + width), array)


@pytest.mark.parametrize(
    "call",
    [
        lambda xp, a: xp.clip(a, 1),
        lambda xp, a: xp.clip(a, a_min=1),
        lambda xp, a: xp.clip(a, a_max=3),
        lambda xp, a: xp.clip(a, 1, 3, min=2),
        lambda xp, a: xp.clip(a),
        lambda xp, a: xp.clip(a, min=1),
        lambda xp, a: xp.clip(a, None, 2),
    ],
    ids=["a_min_only", "a_min_keyword_only", "a_max_only", "both_and_min", "no_bounds", "min_keyword", "upper_only"],
)
def test_clip_arguments_as_numpy(snp: ModuleType, call) -> None:
    """A missing bound is NumPy's TypeError, not a one-sided clip."""
    check_same(snp, call, np.arange(8.0))


@DIFFERENTIAL
@given(
    array=arrays(st.sampled_from(INEXACT_DTYPES), shapes, bound=1000, finite=True),
    decimals=st.integers(-2, 3),
)
def test_round_matches_numpy(snp: ModuleType, array: np.ndarray, decimals: int) -> None:
    check_same(snp, lambda xp, a: xp.round(a, decimals), array)
    check_same(snp, lambda xp, a: xp.around(a, decimals), array)


@pytest.mark.parametrize("dtype", ["int8", "uint8", "int64", "float32", "float64"])
def test_ufunc_with_out_writes_into_out(snp: ModuleType, dtype: str) -> None:
    def add_into(xp, a, b, out):
        result = xp.add(a, b, out=out)
        assert result is out
        return out

    a = np.arange(12, dtype=dtype).reshape(3, 4)
    b = np.arange(4, dtype=dtype)
    check_same(snp, add_into, a, b, np.zeros((3, 4), dtype))


def test_ufunc_out_into_a_view_writes_the_base(snp: ModuleType) -> None:
    def multiply_into_view(xp, base):
        xp.multiply(base[::2], 10, out=base[::2])
        return base

    check_same(snp, multiply_into_view, np.arange(10.0))


def test_ufunc_with_dtype_and_where_arguments(snp: ModuleType) -> None:
    a = np.arange(10, dtype=np.int16)
    check_same(snp, lambda xp, x: xp.add(x, x, dtype=np.float32), a)
    check_same(snp, lambda xp, x, out: xp.negative(x, out=out, where=x % 3 == 0), a, a * 100)


def test_divmod_and_modf_return_pairs(snp: ModuleType) -> None:
    a = np.linspace(-5, 5, 13)
    check_same(snp, lambda xp, x: xp.divmod(x, 3), a)
    check_same(snp, lambda xp, x: divmod(x, 3), a)
    check_same(snp, lambda xp, x: xp.modf(x), a)


def test_where_given_as_numpys_no_value_with_an_output_is_recorded(every_array_lazy, monkeypatch) -> None:
    """NumPy's own functions pass ``where=np._NoValue`` on (``nanvar``'s ``np.subtract(..., out=arr,
    where=where)``): every element, as NumPy takes it; the call is recorded, not computed on the
    arrays' contents. Without ``out`` NumPy warns, and so does the call here."""
    import warnings

    import shoal.numpy as snp

    read = count_reads(monkeypatch)
    a, out = snp.arange(6.0) + 1.0, snp.zeros(6) + 0.0
    result = np.subtract(a, 0.5, out=out, casting="unsafe", where=np._NoValue)
    assert result is out and not read
    np.testing.assert_array_equal(np.asarray(out), np.arange(6.0) + 0.5)
    with warnings.catch_warnings(record=True) as shoal_caught:
        warnings.simplefilter("always")
        shoal_result = np.asarray(np.add(a, 1.0, where=np._NoValue))
    with warnings.catch_warnings(record=True) as numpy_caught:
        warnings.simplefilter("always")
        numpy_result = np.add(np.arange(6.0) + 1.0, 1.0, where=np._NoValue)
    np.testing.assert_array_equal(shoal_result, numpy_result)
    assert [(w.category, str(w.message)) for w in shoal_caught] == [(w.category, str(w.message)) for w in numpy_caught]


def with_object_operands(xp: ModuleType, size: int) -> list[tuple]:
    """Ufuncs of a lazy array and a ``Fraction``, a ``Decimal`` or a list of them: NumPy compares
    and computes element by element as objects (Shoal recorded the object as a constant and
    raised an internal BytecodeError at the next read)."""
    x = xp.linspace(0, 1, size)
    n = xp.arange(size)
    calls = [
        lambda: (x < fractions.Fraction(1, 3)).sum(),
        lambda: (x >= decimal.Decimal("0.5")).sum(),
        lambda: (n > fractions.Fraction(7, 2)).sum(),
        lambda: (x == fractions.Fraction(1, 2))[:4],
        lambda: xp.less(x, [fractions.Fraction(1, 3)]).sum(),
        lambda: xp.maximum(x, fractions.Fraction(1, 2))[-3:],
        lambda: (x + fractions.Fraction(1, 2))[:3],
        lambda: (n * decimal.Decimal("1.5"))[-2:],
        lambda: x * decimal.Decimal("2"),
        lambda: (x + xp.longdouble(0.5))[:3],
    ]
    return [summarized(call) for call in calls]


def test_ufuncs_of_object_operands_compute_as_numpy(snp_any: ModuleType) -> None:
    assert with_object_operands(snp_any, 40) == with_object_operands(np, 40)


def test_ufuncs_of_object_operands_at_default_settings(snp_default: ModuleType) -> None:
    assert with_object_operands(snp_default, 600_000) == with_object_operands(np, 600_000)

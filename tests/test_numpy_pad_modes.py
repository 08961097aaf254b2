"""``np.pad``'s axis-by-axis modes on lazy arrays against NumPy: ``maximum``, ``minimum``,
``mean`` and ``median`` with ``stat_length``, ``linear_ramp`` with ``end_values``,
``reflect``/``symmetric`` with ``reflect_type='odd'``, ``empty`` and a dict of widths; NumPy's
values (corners included), dtypes and errors, with no fallback (a ``ShoalFallbackWarning`` fails
the test)."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy_fixtures import DIFFERENTIAL, arrays, check_same, needs_runtime

PAD_DTYPES = st.sampled_from([np.dtype(n) for n in ("bool", "int8", "int64", "uint16", "float32", "float64", "complex128")])
pad_shapes = st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple)
widths = st.integers(0, 4) | st.tuples(st.integers(0, 4), st.integers(0, 4)) | st.lists(
    st.tuples(st.integers(0, 5), st.integers(0, 5)), min_size=1, max_size=3
)
stat_lengths = st.none() | st.integers(1, 5) | st.tuples(st.integers(1, 5), st.integers(1, 5)) | st.lists(
    st.tuples(st.integers(1, 4), st.integers(1, 4)), min_size=1, max_size=3
)
end_values = st.integers(-5, 5) | st.tuples(st.floats(-3, 3), st.integers(-9, 9)) | st.lists(
    st.tuples(st.integers(-4, 4), st.floats(-2, 2)), min_size=1, max_size=3
)


def _fits(option, ndim: int) -> bool:
    """True if a per-axis list of pairs names each axis (else NumPy's broadcast error, tested apart)."""
    return not isinstance(option, list) or len(option) in (1, ndim)


def _tolerance(value: np.ndarray) -> float:
    return 1e-5 if value.dtype == np.float32 else 1e-12


@DIFFERENTIAL
@given(value=arrays(PAD_DTYPES, pad_shapes, bound=50), width=widths, mode=st.sampled_from(["maximum", "minimum", "mean", "median"]), length=stat_lengths)
def test_statistic_modes(snp: ModuleType, value: np.ndarray, width, mode: str, length) -> None:
    if not (_fits(width, value.ndim) and _fits(length, value.ndim)):
        return
    check_same(snp, lambda xp, v: xp.pad(v, width, mode, stat_length=length), value, rtol=_tolerance(value))


@DIFFERENTIAL
@given(value=arrays(PAD_DTYPES, pad_shapes, bound=50), width=widths, ends=end_values)
def test_linear_ramp(snp: ModuleType, value: np.ndarray, width, ends) -> None:
    if not (_fits(width, value.ndim) and _fits(ends, value.ndim)):
        return
    check_same(snp, lambda xp, v: xp.pad(v, width, "linear_ramp", end_values=ends), value, rtol=_tolerance(value), atol=1e-12)


@DIFFERENTIAL
@given(value=arrays(PAD_DTYPES, pad_shapes, bound=50), width=widths, mode=st.sampled_from(["reflect", "symmetric"]))
def test_odd_reflections(snp: ModuleType, value: np.ndarray, width, mode: str) -> None:
    if not _fits(width, value.ndim):
        return
    check_same(snp, lambda xp, v: xp.pad(v, width, mode, reflect_type="odd"), value, rtol=_tolerance(value))


def test_median_and_mean_with_nan(snp: ModuleType) -> None:
    value = np.arange(20.0).reshape(4, 5) ** 1.5
    value[1, 2] = np.nan
    for mode in ("median", "mean", "maximum", "minimum"):
        check_same(snp, lambda xp, v, m=mode: xp.pad(v, ((2, 1), (3, 2)), m), value)
        check_same(snp, lambda xp, v, m=mode: xp.pad(v, ((2, 1), (3, 2)), m, stat_length=2), value)
    complex_value = value + 1j
    check_same(snp, lambda xp, v: xp.pad(v, 2, "median"), complex_value)


def test_integer_statistics_round_half_to_even(snp: ModuleType) -> None:
    value = np.array([[1, 2, 5, 6], [3, 4, 8, 7]], np.int16)
    for mode in ("mean", "median"):
        for length in (None, 1, 2, 3):
            check_same(snp, lambda xp, v, m=mode, n=length: xp.pad(v, ((1, 2), (2, 1)), m, stat_length=n), value)


def test_dict_widths(snp: ModuleType) -> None:
    value = np.arange(12.0).reshape(3, 4)
    for mode in ("constant", "edge", "wrap", "mean", "linear_ramp"):
        check_same(snp, lambda xp, v, m=mode: xp.pad(v, {0: 2, -1: (1, 3)}, m), value)


def test_empty_mode_keeps_the_centre(snp: ModuleType) -> None:
    value = np.arange(12.0).reshape(3, 4)
    check_same(snp, lambda xp, v: xp.pad(v, ((1, 2), (3, 0)), "empty")[1:-2, 3:], value)
    check_same(snp, lambda xp, v: xp.pad(v, ((1, 2), (3, 0)), "empty").shape, value)
    check_same(snp, lambda xp, v: xp.pad(v, 2, "empty").shape, np.zeros((0, 3)))


@pytest.mark.parametrize(
    "call",
    [
        lambda xp, v: xp.pad(v, 1, "maximum", stat_length=0),
        lambda xp, v: xp.pad(v, 1, "minimum", stat_length=(2, 0)),
        lambda xp, v: xp.pad(v, 1, "mean", stat_length=-1),
        lambda xp, v: xp.pad(v, 1, "median", stat_length=((1, 2), (3, 4), (5, 6))),
        lambda xp, v: xp.pad(v, 1, "mean", end_values=3),
        lambda xp, v: xp.pad(v, 1, "linear_ramp", stat_length=3),
        lambda xp, v: xp.pad(v, 1, "linear_ramp", end_values=((1, 2), (3, 4), (5, 6))),
        lambda xp, v: xp.pad(v[:0], 1, "median"),
        lambda xp, v: xp.pad(v[:0], 1, "linear_ramp"),
        lambda xp, v: xp.pad(v, 1, "empty", constant_values=1),
        lambda xp, v: xp.pad(v, {5: 1}),
        lambda xp, v: xp.pad(v, {0: (1, 2, 3)}),
        lambda xp, v: xp.pad(v, {0: 1.5}),
    ],
)
def test_errors_are_numpys(snp: ModuleType, call) -> None:
    assert check_same(snp, call, np.arange(12.0).reshape(3, 4)) is not None


def test_statistic_padding_stays_lazy(snp: ModuleType) -> None:
    needs_runtime()
    value = snp.arange(12.0).reshape(3, 4)
    for mode in ("median", "mean", "linear_ramp"):
        assert isinstance(snp.pad(value, 2, mode), snp.ndarray)
    np.testing.assert_allclose(np.asarray(snp.pad(value, 2, "median")), np.pad(np.arange(12.0).reshape(3, 4), 2, "median"))

"""``np.copyto`` recorded (``shoal/numpy/_copyto.py``) and NumPy's Python functions that write
through it or build their result with NumPy's own constructors (``select``, ``unwrap``,
``trapezoid``, ``vander``, ``polyval``, ``digitize``): NumPy's values, dtypes, errors and
messages, no fallback counted, on the recorded path (``snp_recorded``) and the settled one
(``snp_any``)."""

from __future__ import annotations

import warnings
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy_fixtures import DIFFERENTIAL, arrays, check_same, dtypes

pytestmark = pytest.mark.usefixtures("no_fallback")

CASTINGS = st.sampled_from(["no", "equiv", "safe", "same_kind", "unsafe"])
SCALARS = st.sampled_from([0, 1, -3, 300, 2**40, 1.5, -0.25, float("nan"), 1e300, 2 + 1j, True])
matrices = arrays(st.sampled_from([np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.int32), np.dtype(np.int8), np.dtype(np.complex128), np.dtype(np.bool_)]), (3, 4), bound=200)


def _message(call) -> tuple:
    """The error ``call()`` raised (type and text, or None) and the warnings it gave (category,
    text, file: a cast that drops the imaginary part warns at the caller's line)."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            call()
            raised = None
        except Exception as error:
            raised = (type(error), str(error))
    return raised, [(w.category, str(w.message), w.filename) for w in caught]


@DIFFERENTIAL
@given(target=matrices, source=arrays(dtypes, st.sampled_from([(), (4,), (3, 4), (1, 4), (3, 1), (2, 4), (1, 3, 4)]), bound=200), casting=CASTINGS, masked=st.booleans())
def test_copyto_an_array_matches_numpy(snp_any: ModuleType, target: np.ndarray, source: np.ndarray, casting: str, masked: bool) -> None:
    mask = (np.arange(12).reshape(3, 4) % 3 == 0) if masked else True
    results, messages = [], []
    for xp in (np, snp_any):
        destination = xp.array(target, copy=True)
        messages.append(_message(lambda xp=xp, d=destination: xp.copyto(d, xp.array(source), casting=casting, where=xp.asarray(mask) if masked else True)))
        results.append(np.asarray(destination))
    assert messages[0] == messages[1]
    np.testing.assert_array_equal(results[1], results[0])


@DIFFERENTIAL
@given(target=matrices, value=SCALARS, casting=CASTINGS, mask_shape=st.sampled_from([None, (4,), (3, 1), (2, 4)]))
def test_copyto_a_python_scalar_matches_numpy(snp_any: ModuleType, target: np.ndarray, value, casting: str, mask_shape) -> None:
    """NEP 50: a Python number's value decides (300 into int8 raises), a mask broadcasts or
    raises NumPy's error."""
    mask = True if mask_shape is None else (np.arange(int(np.prod(mask_shape))).reshape(mask_shape) % 2 == 0)
    results, messages = [], []
    for xp in (np, snp_any):
        destination = xp.array(target, copy=True)
        messages.append(_message(lambda xp=xp, d=destination: xp.copyto(d, value, casting=casting, where=xp.asarray(mask) if mask_shape else True)))
        results.append(np.asarray(destination))
    assert messages[0] == messages[1]
    np.testing.assert_array_equal(results[1], results[0])


def test_copyto_into_numpy_memory_reads_lazy_operands(snp_any: ModuleType) -> None:
    target = np.zeros((3, 4))
    snp_any.copyto(target, snp_any.arange(12.0).reshape(3, 4), where=snp_any.arange(12).reshape(3, 4) > 5)
    expected = np.zeros((3, 4))
    np.copyto(expected, np.arange(12.0).reshape(3, 4), where=np.arange(12).reshape(3, 4) > 5)
    np.testing.assert_array_equal(target, expected)
    assert _message(lambda: snp_any.copyto(snp_any.arange(3)[0], 1)) == _message(lambda: np.copyto(np.arange(3)[0], 1))


@DIFFERENTIAL
@given(value=arrays(st.sampled_from([np.dtype(np.float64), np.dtype(np.int64), np.dtype(np.float32)]), (4, 6), bound=20), default=st.sampled_from([0, -1.5, 7]))
def test_functions_writing_through_copyto_match_numpy(snp_any: ModuleType, value: np.ndarray, default) -> None:
    check_same(snp_any, lambda xp, v: xp.select([v > 2, v < -3], [v * 2, v + 100], default=default), value)
    check_same(snp_any, lambda xp, v: xp.unwrap(v, axis=1), value, rtol=1e-6)
    check_same(snp_any, lambda xp, v: xp.unwrap(v, discont=4.0, axis=0, period=7), value, rtol=1e-6)
    check_same(snp_any, lambda xp, v: xp.trapezoid(v, axis=0), value, rtol=1e-6)
    check_same(snp_any, lambda xp, v: xp.trapezoid(v, x=np.arange(6.0) ** 2), value, rtol=1e-6)
    check_same(snp_any, lambda xp, v: xp.vander(v[0], 4), value, rtol=1e-6)
    check_same(snp_any, lambda xp, v: xp.vander(v[1], 5, increasing=True), value, rtol=1e-6)
    check_same(snp_any, lambda xp, v: xp.polyval([1.5, -2, 3], v), value, rtol=1e-6)


def test_their_errors_are_numpys(snp_any: ModuleType) -> None:
    value = np.arange(24.0).reshape(4, 6)
    calls = [
        lambda xp, v: xp.select([v > 2], [v, v]),
        lambda xp, v: xp.select([v], [v]),
        lambda xp, v: xp.vander(v, 3),
        lambda xp, v: xp.trapezoid(v, x=np.arange(5.0)),
    ]
    for call in calls:
        assert _message(lambda call=call: call(np, value)) == _message(lambda call=call: call(snp_any, snp_any.array(value)))


@DIFFERENTIAL
@given(value=arrays(st.sampled_from([np.dtype(np.float64), np.dtype(np.int32)]), st.sampled_from([(9,), (3, 4)]), bound=20), bins=st.sampled_from([[0, 2, 5], [9, 4, 1], [-1.5], [3, 3, 7]]), right=st.booleans())
def test_digitize_matches_numpy(snp_recorded: ModuleType, value: np.ndarray, bins, right: bool) -> None:
    """``np.digitize`` (NumPy's steps: ``searchsorted`` of the lazy array, reversed bins for
    decreasing ones), and its errors for bins that are not monotonic and complex values."""
    check_same(snp_recorded, lambda xp, v: xp.digitize(v, bins, right=right), value)
    for call in (lambda xp, v: xp.digitize(v, [3, 1, 5]), lambda xp, v: xp.digitize(v * 1j, [1, 2])):
        assert _message(lambda call=call: call(np, value)) == _message(lambda call=call: call(snp_recorded, snp_recorded.array(value)))

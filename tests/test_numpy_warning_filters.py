"""Warnings that Shoal itself could add to a program: none under NumPy's filters and modes.

``a ** -1`` decided whether to run as ``reciprocal`` on a probe of zeros and leaked that
probe's divide-by-zero warnings from Shoal's own line; a program that turns warnings into
errors crashed on the note that a function ran in NumPy (:class:`ShoalFallbackWarning`).
"""

from __future__ import annotations

import collections
import warnings

import numpy
import pytest

import shoal.numpy as snp
from shoal import runtime
from shoal.errors import ShoalFallbackWarning
from shoal.numpy import _dispatch, _methods


@pytest.fixture
def lazy():
    with runtime.configure(engine="node", eager_threshold=0) as rt:
        yield rt


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8"])
@pytest.mark.parametrize("exponent", [-1, -2, -0.5, 0.5, 2, 3])
def test_powers_warn_and_fail_as_numpy(lazy, dtype, exponent):
    _methods._fast_power_for.cache_clear()

    def program(np):
        values = np.arange(1, 9).astype(dtype)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = numpy.asarray(values**exponent).tolist()
            except Exception as error:  # NumPy's: integers to negative integer powers
                result = (type(error).__name__, str(error))
        return result, [(w.category, str(w.message), w.filename) for w in caught]

    assert program(snp) == program(numpy)


def test_a_fallback_is_no_error_where_warnings_are_errors(lazy, monkeypatch):
    monkeypatch.setattr(_dispatch, "FALLBACKS", collections.Counter())
    values = snp.arange(1.0, 9.0) * 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert float(snp.nanmean(values)) == 9.0  # NumPy's nanmean, on the computed values
    assert _dispatch.FALLBACKS["nanmean"] == 1


def test_a_filter_that_names_the_fallback_warning_raises_it(lazy, monkeypatch):
    monkeypatch.setattr(_dispatch, "FALLBACKS", collections.Counter())
    values = snp.arange(1.0, 9.0) * 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShoalFallbackWarning)
        with pytest.raises(ShoalFallbackWarning, match="nanmean"):
            snp.nanmean(values)

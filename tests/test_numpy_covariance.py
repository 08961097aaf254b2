"""``np.cov`` and ``np.corrcoef`` of lazy arrays run NumPy's own steps lazily
(``shoal/numpy/_composed.py``): NumPy's values, dtypes, errors and warnings (their "Degrees of
freedom <= 0 for slice" names the program's line), and no fallback counted."""

from __future__ import annotations

import warnings
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy_fixtures import DIFFERENTIAL, arrays, check_same, same_values_and_warnings

pytestmark = pytest.mark.usefixtures("no_fallback")

observations = arrays(st.sampled_from([np.dtype(np.float64), np.dtype(np.float32), np.dtype(np.int64), np.dtype(np.complex128)]), st.sampled_from([(3, 7), (1, 5), (4, 2), (6,)]), bound=50)


@DIFFERENTIAL
@given(value=observations, rowvar=st.booleans(), bias=st.booleans(), ddof=st.sampled_from([None, 0, 2]), weighted=st.booleans())
def test_cov_matches_numpy(snp_recorded: ModuleType, value: np.ndarray, rowvar: bool, bias: bool, ddof, weighted: bool) -> None:
    count = value.shape[-1] if rowvar or value.ndim == 1 else value.shape[0]
    weights = np.arange(1.0, count + 1) if weighted else None
    check_same(snp_recorded, lambda xp, v: xp.cov(v, rowvar=rowvar, bias=bias, ddof=ddof, aweights=weights), value, rtol=1e-6, atol=1e-9)


@DIFFERENTIAL
@given(value=observations, rowvar=st.booleans())
def test_corrcoef_matches_numpy(snp_recorded: ModuleType, value: np.ndarray, rowvar: bool) -> None:
    check_same(snp_recorded, lambda xp, v: xp.corrcoef(v, rowvar=rowvar), value, rtol=1e-6, atol=1e-9)
    if value.ndim == 2 and value.shape[0] >= 2:
        check_same(snp_recorded, lambda xp, v: xp.cov(v[0], v[1]), value, rtol=1e-6, atol=1e-9)


def test_their_warnings_name_the_programs_line(snp_recorded: ModuleType) -> None:
    value = np.arange(6.0).reshape(3, 2)
    seen = []
    for xp in (np, snp_recorded):
        with warnings.catch_warnings(record=True) as caught, np.errstate(all="warn"):
            warnings.simplefilter("always")
            data = xp.array(value)
            np.asarray(xp.cov(data[:, :1]))
            np.asarray(xp.corrcoef(data[:, :1]))
        seen.append([(w.category, str(w.message), w.filename, w.lineno) for w in caught])
    assert [warning[:2] for warning in seen[0]] == [warning[:2] for warning in seen[1]]
    # The function's own warning names the program's line. A floating-point warning from a step
    # inside NumPy's code (``c *= 1 / fact``) names that step's line in NumPy's file under NumPy
    # and the program's line under Shoal (docs/decisions.md, stop 42).
    own = [[warning for warning in found if "Degrees of freedom" in warning[1]] for found in seen]
    assert own[0] == own[1] and own[1]


def test_their_errors_are_numpys(snp_recorded: ModuleType) -> None:
    for call in (lambda xp: xp.cov(xp.ones((2, 2, 2))), lambda xp: xp.cov(xp.ones((2, 3)), aweights=[1.0, 2.0])):
        errors = []
        for xp in (np, snp_recorded):
            with pytest.raises(Exception) as caught:
                call(xp)
            errors.append((type(caught.value), str(caught.value)))
        assert errors[0] == errors[1]


@pytest.mark.parametrize(
    "call",
    [
        lambda xp, X: xp.cov(X[:, 0]),
        lambda xp, X: xp.corrcoef(X[:, 0], X[:, 1]),
        lambda xp, X: xp.cov(X[5]),
        lambda xp, X: xp.array(X[:10], ndmin=3),
        lambda xp, X: xp.array(X[:, 1], ndmin=2, dtype=xp.float32),
    ],
    ids=["cov_of_a_column", "corrcoef_of_two_columns", "cov_of_a_row", "array_ndmin_of_rows", "array_ndmin_cast"],
)
def test_of_views_of_drawn_arrays_at_default_settings(call) -> None:
    """Views of an array drawn from a generator (memory already computed, its small views NumPy's
    at once): ``np.array(view, ndmin=2)`` inside ``np.cov`` gave NumPy's copy to Shoal's reshape."""
    def program(xp: ModuleType) -> object:
        X = xp.random.default_rng(0).random((300_000, 2))
        return call(xp, X)

    same_values_and_warnings(program)

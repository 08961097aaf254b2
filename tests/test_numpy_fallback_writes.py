"""NumPy functions that change an argument in place keep their change through the fallback.

The fallback runs NumPy on a materialised copy; for ``np.fill_diagonal`` and its kind the copy
is what changes, so the fallback writes it back to the lazy array (Floyd-Warshall's
``np.fill_diagonal(weights, 0.0)`` was once lost, and its shortest paths were wrong).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from numpy_fixtures import AGAINST_NUMPY, assert_same

from shoal.numpy._lazy import is_lazy

CALLS = {
    "fill_diagonal": lambda xp, a: xp.fill_diagonal(a, 0.5),
    "fill_diagonal wrap": lambda xp, a: xp.fill_diagonal(a, -1.0, wrap=True),
    "put": lambda xp, a: xp.put(a, [0, 5, 7], [9.0, 8.0, 7.0]),
    "place": lambda xp, a: xp.place(a, a > 0.5, [0.0, 1.0]),
    "putmask": lambda xp, a: xp.putmask(a, a < 0.3, -2.0),
    "copyto": lambda xp, a: xp.copyto(a, 3.0, where=a > 0.4),
    "copyto by keyword": lambda xp, a: xp.copyto(dst=a, src=xp.full(a.shape, 4.0)),
    "put_along_axis": lambda xp, a: xp.put_along_axis(a, xp.argmax(a, axis=1, keepdims=True), 0.0, axis=1),
}


@pytest.mark.parametrize("call", CALLS, ids=list(CALLS))
def test_in_place_functions_change_the_lazy_array(snp, call):
    values = np.random.default_rng(5).random((7, 6))
    expected = values.copy()
    CALLS[call](np, expected)
    got = snp.array(values, copy=True)
    assert AGAINST_NUMPY or is_lazy(got)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # some run through the fallback, with its warning
        CALLS[call](snp, got)
    assert_same(got, expected)

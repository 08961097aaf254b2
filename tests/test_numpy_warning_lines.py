"""Warnings NumPy gives inside calls Shoal makes for the user name the line NumPy would name.

``mean``, ``var`` and ``std`` of an empty lazy slice ("Mean of empty slice", "Degrees of freedom
<= 0", then "invalid value encountered in scalar divide" or "in divide"), as methods (the user's
line) and as functions (NumPy's ``fromnumeric.py``), and warnings of operations Shoal runs in
NumPy (fallbacks: ``np.copyto`` complex to real, ``np.nanmean`` of nothing): text, category,
file, line and count as NumPy's, ``default`` filters counting in the user's module.
``np.linalg.det`` and ``slogdet`` warn from NumPy's ``numpy/linalg/_linalg.py``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from shoal.errors import ShoalFallbackWarning

N = 1 << 12


def shown(case: Callable[[ModuleType], Any], xp: ModuleType, action: str = "always") -> list[tuple[Any, ...]]:
    """(category, message, file, line) of each warning ``case`` makes (Shoal's own fallback
    notices left out), its results read."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter(action)
        warnings.simplefilter("ignore", ShoalFallbackWarning)
        for value in case(xp):
            np.asarray(value)
    return [(w.category, str(w.message), w.filename, w.lineno) for w in caught]


def empty_means(xp: ModuleType) -> list[Any]:
    a = xp.arange(N) * 1.0
    grid = xp.zeros((N // 4, 4))
    return [
        a[3:3].mean(),
        xp.mean(a[5:5]),
        grid[:, 4:].mean(axis=1),
        xp.mean(grid[:0], axis=0),
        a[:0].var(),
        xp.std(a[:0], ddof=1),
        grid[:0].std(axis=0, keepdims=True),
    ]


def fallbacks(xp: ModuleType) -> list[Any]:
    a = xp.arange(N) * 1.5
    target = xp.zeros(N)
    xp.copyto(target, a * (1 + 1j), casting="unsafe")
    return [target, xp.nanmean(a[:0]), xp.nanmean(xp.full(N, xp.nan))]


def determinants(xp: ModuleType) -> list[Any]:
    scaled = xp.eye(64) * 1e10  # a determinant of 1e640
    stack = xp.ones((N // 4, 2, 2))
    stack[3, 0, 0] = xp.nan
    return [xp.linalg.det(scaled), xp.linalg.det(stack), *xp.linalg.slogdet(stack)]


@pytest.mark.parametrize("case", [empty_means, fallbacks, determinants], ids=lambda case: case.__name__)
def test_warnings_name_numpys_lines(snp: ModuleType, case: Callable[[ModuleType], Any]) -> None:
    expected = shown(case, np)
    assert expected
    assert shown(case, snp) == expected


@pytest.fixture
def fresh_registry() -> Iterator[None]:
    globals().pop("__warningregistry__", None)
    yield
    globals().pop("__warningregistry__", None)


def test_default_filter_counts_in_the_users_module(snp: ModuleType, fresh_registry: None) -> None:
    def repeated(xp: ModuleType) -> list[Any]:
        kept = []
        for _ in range(3):
            target = xp.zeros(N)
            xp.copyto(target, xp.ones(N) * 1j, casting="unsafe")
            kept.append(xp.arange(N)[:0].mean())
        return kept

    expected = shown(repeated, np, "default")
    globals().pop("__warningregistry__", None)
    assert shown(repeated, snp, "default") == expected
    assert len(expected) == 3  # ComplexWarning, "Mean of empty slice", "invalid value": once each


@pytest.mark.parametrize("xp", ["numpy", "shoal"])
def test_errors_in_calls_made_for_the_user_keep_numpys_type(snp: ModuleType, xp: str) -> None:
    module = np if xp == "numpy" else snp
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ShoalFallbackWarning)
        warnings.simplefilter("ignore", RuntimeWarning)
        with pytest.raises(ValueError, match="'list' argument must have no negative elements"):
            module.bincount(module.arange(N) - 5)
        with np.errstate(invalid="raise"), pytest.raises(FloatingPointError, match="invalid value encountered in scalar divide"):
            module.arange(N)[:0].mean()

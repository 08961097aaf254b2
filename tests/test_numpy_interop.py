"""Interoperability: real NumPy accepts Shoal arrays, and unimplemented functions fall back."""

from __future__ import annotations

import warnings
from types import ModuleType

import numpy as np
import pytest
from numpy_fixtures import LAZY_MODES, assert_same, needs_runtime, shoal_numpy


def lazy_grid(snp: ModuleType) -> tuple[object, np.ndarray]:
    expected = np.arange(12.0).reshape(3, 4) - 4
    return snp.arange(12.0).reshape(3, 4) - 4, expected


def test_numpy_asarray_gives_an_ndarray(snp: ModuleType) -> None:
    array, expected = lazy_grid(snp)
    for converted in (np.asarray(array), np.array(array), np.asarray(array[::-1].T)):
        assert type(converted) is np.ndarray
    np.testing.assert_array_equal(np.asarray(array), expected, strict=True)
    np.testing.assert_array_equal(np.asarray(array, dtype=np.float32), expected.astype(np.float32))
    np.testing.assert_array_equal(np.array(array[::-1].T), expected[::-1].T, strict=True)


def test_numpy_ufuncs_accept_shoal_arrays(snp: ModuleType) -> None:
    array, expected = lazy_grid(snp)
    assert_same(np.sin(array), np.sin(expected))
    assert_same(np.add(array, 1), expected + 1)
    assert_same(np.maximum.reduce(array, axis=1), np.maximum.reduce(expected, axis=1))
    assert_same(np.multiply(expected, array), expected * expected)
    assert_same(expected + array, expected * 2)  # NumPy's operator defers to Shoal's
    out = snp.zeros((3, 4))
    result = np.subtract(array, 1, out=out)
    assert result is out
    assert_same(out, expected - 1)


def test_numpy_functions_accept_shoal_arrays(snp: ModuleType) -> None:
    array, expected = lazy_grid(snp)
    assert_same(np.sum(array, axis=0), np.sum(expected, axis=0))
    assert_same(np.mean(array), np.mean(expected))
    assert_same(np.concatenate([array, array]), np.concatenate([expected, expected]))
    assert_same(np.where(array > 0, array, 0), np.where(expected > 0, expected, 0))
    assert_same(np.transpose(array), expected.T)
    assert_same(np.reshape(array, (4, 3)), expected.reshape(4, 3))
    assert_same(np.stack([array, array], axis=1), np.stack([expected, expected], axis=1))
    assert_same(np.dot(array, array.T), expected @ expected.T)
    assert_same(np.vstack([array, array]), np.vstack([expected, expected]))
    assert_same(np.allclose(array, expected), True)


def test_mixing_plain_numpy_and_shoal_arrays(snp: ModuleType) -> None:
    array, expected = lazy_grid(snp)
    plain = np.linspace(0, 1, 4)
    assert_same(array * plain, expected * plain)
    assert_same(plain - array, plain - expected)
    assert_same(snp.maximum(plain, array), np.maximum(plain, expected))
    array[1] = plain
    expected[1] = plain
    assert_same(array, expected)


def test_unimplemented_function_falls_back_once_with_a_warning() -> None:
    needs_runtime()
    from shoal import ShoalFallbackWarning

    with shoal_numpy(LAZY_MODES[0]) as snp:
        values = np.array([0.0, 3.0, 6.5, -3.0, 0.5])
        array = snp.array(values)
        before = snp.fallbacks_used().get("i0", 0)
        with pytest.warns(ShoalFallbackWarning, match="i0"):
            first = snp.i0(array)
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            second = np.i0(array)  # through NumPy's protocol: the same fallback, no new warning
        assert_same(first, np.i0(values))
        assert_same(second, np.i0(values))
        assert snp.fallbacks_used()["i0"] == before + 2

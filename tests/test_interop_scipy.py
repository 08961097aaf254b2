"""SciPy with Shoal: Shoal's generators are NumPy's own types, and Shoal arrays go into
``scipy.ndimage`` and ``scipy.signal`` giving NumPy's results."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
import scipy.ndimage
import scipy.signal
import scipy.sparse
import scipy.stats
from numpy_fixtures import assert_same, needs_runtime

# A library that runs NumPy functions on a Shoal array gets them through the fallback (NumPy on
# the computed values); the warning that says so is expected here.
pytestmark = pytest.mark.filterwarnings("ignore::shoal.errors.ShoalFallbackWarning")


def test_generators_are_numpys_types(snp: ModuleType) -> None:
    rng = snp.random.default_rng(7)
    assert isinstance(rng, np.random.Generator)
    assert isinstance(snp.random.RandomState(7), np.random.RandomState)
    assert snp.random.default_rng(rng) is rng
    numpy_rng = np.random.default_rng(7)
    assert snp.random.default_rng(numpy_rng) is numpy_rng  # as NumPy: a Generator is kept


def test_large_draws_stay_lazy_and_equal_numpys(snp: ModuleType) -> None:
    needs_runtime()
    draw = snp.random.default_rng(3).standard_normal((40, 50))
    legacy = snp.random.RandomState(3).rand(40, 50)
    assert type(draw) is snp.ndarray and type(draw) is not np.ndarray
    assert type(legacy) is snp.ndarray and type(legacy) is not np.ndarray
    assert_same(draw, np.random.default_rng(3).standard_normal((40, 50)), rtol=0.0)
    assert_same(legacy, np.random.RandomState(3).rand(40, 50), rtol=0.0)


def test_scipy_sparse_random_accepts_the_generator(snp: ModuleType) -> None:
    shoal_matrix = scipy.sparse.random(30, 40, density=0.3, random_state=snp.random.default_rng(5))
    numpy_matrix = scipy.sparse.random(30, 40, density=0.3, random_state=np.random.default_rng(5))
    np.testing.assert_array_equal(shoal_matrix.toarray(), numpy_matrix.toarray(), strict=True)
    legacy = scipy.sparse.random(10, 10, density=0.5, random_state=snp.random.RandomState(2))
    np.testing.assert_array_equal(
        legacy.toarray(), scipy.sparse.random(10, 10, density=0.5, random_state=np.random.RandomState(2)).toarray()
    )


def test_scipy_stats_random_state(snp: ModuleType) -> None:
    for make in (snp.random.default_rng, snp.random.RandomState):
        reference = np.random.default_rng if make is snp.random.default_rng else np.random.RandomState
        drawn = scipy.stats.norm.rvs(loc=1.0, size=(20, 3), random_state=make(11))
        expected = scipy.stats.norm.rvs(loc=1.0, size=(20, 3), random_state=reference(11))
        assert type(drawn) is np.ndarray  # a library asking for numbers gets NumPy's arrays
        np.testing.assert_array_equal(drawn, expected, strict=True)
        sample = scipy.stats.gamma(2.0).rvs(size=100, random_state=make(4))
        np.testing.assert_array_equal(sample, scipy.stats.gamma(2.0).rvs(size=100, random_state=reference(4)))


def test_shoal_arrays_into_ndimage_and_signal(snp: ModuleType) -> None:
    needs_runtime()
    expected = np.sin(np.arange(400.0).reshape(20, 20) / 7.0)
    image = snp.sin(snp.arange(400.0).reshape(20, 20) / 7.0)
    assert type(image) is snp.ndarray and type(image) is not np.ndarray
    np.testing.assert_array_equal(scipy.ndimage.gaussian_filter(image, 1.5), scipy.ndimage.gaussian_filter(expected, 1.5))
    np.testing.assert_array_equal(scipy.ndimage.median_filter(image, 3), scipy.ndimage.median_filter(expected, 3))
    np.testing.assert_array_equal(scipy.ndimage.label(image > 0.5)[0], scipy.ndimage.label(expected > 0.5)[0])
    kernel = snp.ones(5) / 5
    np.testing.assert_array_equal(
        scipy.signal.convolve(image[3], kernel, mode="same"), scipy.signal.convolve(expected[3], np.ones(5) / 5, mode="same")
    )
    b, a = scipy.signal.butter(3, 0.2)
    np.testing.assert_array_equal(scipy.signal.lfilter(b, a, image[:, 2]), scipy.signal.lfilter(b, a, expected[:, 2]))
    # welch detrends with a mean, which Shoal's engines may sum in another order (README)
    np.testing.assert_allclose(scipy.signal.welch(image.ravel())[1], scipy.signal.welch(expected.ravel())[1], rtol=1e-12)

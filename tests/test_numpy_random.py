"""Random numbers: exactly NumPy's numbers for the same seed, in the same order."""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy_fixtures import DIFFERENTIAL, assert_same

seeds = st.integers(0, 2**32 - 1)
sizes = st.none() | st.integers(0, 50) | st.tuples(st.integers(0, 6), st.integers(0, 6))

GENERATOR_DRAWS: dict[str, Callable] = {
    "random": lambda rng, size: rng.random(size),
    "random-float32": lambda rng, size: rng.random(size, dtype=np.float32),
    "integers": lambda rng, size: rng.integers(-50, 50, size),
    "integers-uint8": lambda rng, size: rng.integers(0, 256, size, dtype=np.uint8),
    "integers-closed": lambda rng, size: rng.integers(3, size=size, endpoint=True),
    "uniform": lambda rng, size: rng.uniform(-2.0, 5.0, size),
    "normal": lambda rng, size: rng.normal(1.0, 3.0, size),
    "standard_normal": lambda rng, size: rng.standard_normal(size),
}

LEGACY_DRAWS: dict[str, Callable] = {
    "random": lambda r, size: r.random(size),
    "uniform": lambda r, size: r.uniform(-1.0, 4.0, size),
    "normal": lambda r, size: r.normal(2.0, 0.5, size),
    "randint": lambda r, size: r.randint(-10, 10, size),
    "randint-int8": lambda r, size: r.randint(0, 100, size, dtype=np.int8),
}


def assert_identical(actual, expected) -> None:
    """Random numbers must be bit-for-bit NumPy's."""
    assert_same(actual, expected, rtol=0.0)


@DIFFERENTIAL
@given(
    seed=seeds,
    size=sizes,
    names=st.lists(st.sampled_from(sorted(GENERATOR_DRAWS)), min_size=1, max_size=3),
)
def test_default_rng_draws_numpys_numbers(snp_any: ModuleType, seed: int, size, names) -> None:
    shoal_rng = snp_any.random.default_rng(seed)
    numpy_rng = np.random.default_rng(seed)
    for name in names:
        draw = GENERATOR_DRAWS[name]
        assert_identical(draw(shoal_rng, size), draw(numpy_rng, size))


@DIFFERENTIAL
@given(
    seed=seeds,
    size=sizes,
    names=st.lists(st.sampled_from(sorted(LEGACY_DRAWS)), min_size=1, max_size=3),
)
def test_legacy_seeded_functions_draw_numpys_numbers(
    snp_any: ModuleType, seed: int, size, names
) -> None:
    snp_any.random.seed(seed)
    drawn = [LEGACY_DRAWS[name](snp_any.random, size) for name in names]
    values = [np.asarray(d) if isinstance(d, snp_any.ndarray) else d for d in drawn]
    np.random.seed(seed)
    for name, value, actual in zip(names, values, drawn):
        expected = LEGACY_DRAWS[name](np.random, size)
        assert_identical(actual, expected)
        assert_identical(value, expected)


@pytest.mark.parametrize("seed", [0, 12345])
def test_legacy_shape_style_functions(snp_any: ModuleType, seed: int) -> None:
    snp_any.random.seed(seed)
    shoal_draws = [
        snp_any.random.rand(3, 4),
        snp_any.random.randn(5),
        snp_any.random.rand(),
        snp_any.random.randn(2, 1, 3),
        snp_any.random.random(),
    ]
    shoal_draws = [np.asarray(d) if isinstance(d, snp_any.ndarray) else d for d in shoal_draws]
    np.random.seed(seed)
    numpy_draws = [
        np.random.rand(3, 4),
        np.random.randn(5),
        np.random.rand(),
        np.random.randn(2, 1, 3),
        np.random.random(),
    ]
    assert_identical(shoal_draws, numpy_draws)


def test_random_arrays_compute_like_numpy(snp: ModuleType) -> None:
    shoal_values = snp.random.default_rng(7).normal(size=(40, 30))
    numpy_values = np.random.default_rng(7).normal(size=(40, 30))
    assert_same((shoal_values * 2 + 1).sum(axis=0), (numpy_values * 2 + 1).sum(axis=0))
    assert_identical(shoal_values[::3, 1:4], numpy_values[::3, 1:4])


def test_reseeding_repeats_the_sequence(snp_any: ModuleType) -> None:
    snp_any.random.seed(99)
    first = np.asarray(snp_any.random.random(10))
    snp_any.random.seed(99)
    assert_identical(snp_any.random.random(10), first)

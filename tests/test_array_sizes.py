"""Arrays of small dtypes count by their bytes against the eager and settled thresholds."""

from __future__ import annotations

import numpy as np
import pytest

import shoal.numpy as snp
from shoal import runtime
from shoal.array_sizes import below
from shoal.numpy._lazy import is_lazy

THRESHOLD = 1024  # elements; 4 KiB of 4-byte elements


@pytest.mark.parametrize(
    ("size", "itemsize", "threshold", "expected"),
    [
        (1023, 8, 1024, True),
        (1024, 8, 1024, False),
        (1024, 16, 1024, False),  # wider elements count by their number, never fewer
        (1023, 16, 1024, True),
        (1024, 4, 1024, False),
        (4095, 1, 1024, True),
        (4096, 1, 1024, False),
        (2047, 2, 1024, True),
        (2048, 2, 1024, False),
        (0, 1, 0, False),  # threshold 0: nothing is below it (every array lazy, nothing settled)
        (10**6, 1, 0, False),
    ],
)
def test_below_counts_elements_and_bytes(size: int, itemsize: int, threshold: int, expected: bool) -> None:
    assert below(size, itemsize, threshold) is expected


@pytest.fixture
def configured():
    with runtime.configure(engine="node", eager_threshold=THRESHOLD, settled_threshold=THRESHOLD) as configured:
        yield configured


@pytest.mark.parametrize(("dtype", "size", "lazy"), [(np.int8, 4095, False), (np.int8, 4096, True), (np.int16, 2047, False), (np.float32, 1023, False), (np.float32, 1024, True), (np.float64, 1024, True), (np.complex128, 1023, False)])
def test_creation_stays_numpy_below_the_bytes(configured, dtype, size: int, lazy: bool) -> None:
    for made in (snp.zeros(size, dtype), snp.ones((1, size), dtype), snp.full((size,), 3, dtype)):
        assert is_lazy(made) is lazy
        assert made.dtype == dtype


def test_results_of_a_settled_small_dtype_array_are_numpys(configured) -> None:
    grid = (snp.arange(3000.0) % 7 < 3).astype(np.int8)  # 3,000 bytes of int8 from lazy float64 work
    assert is_lazy(grid)
    expected = (np.arange(3000.0) % 7 < 3).astype(np.int8)
    assert int(grid[5]) == int(expected[5])  # runs the recorded work: grid is settled now
    total = grid + grid * 2
    assert type(total) is np.ndarray  # computed by NumPy at once, below 4 KiB
    np.testing.assert_array_equal(total, expected + expected * 2)
    mask = grid == 1
    assert type(mask) is np.ndarray
    np.testing.assert_array_equal(mask, expected == 1)
    rolled = snp.roll(grid, 3)
    assert type(rolled) is np.ndarray  # NumPy's roll of the settled memory
    np.testing.assert_array_equal(rolled, np.roll(expected, 3))


def test_threshold_zero_keeps_small_dtypes_lazy() -> None:
    with runtime.configure(engine="node", eager_threshold=0, settled_threshold=0):
        grid = snp.zeros(64, np.int8)
        assert is_lazy(grid)
        assert is_lazy(grid + 1)


@pytest.mark.parametrize("side", [56, 72])  # 3,136 bytes of int8 (NumPy's after the first flush), 5,184 (lazy)
def test_game_of_life_on_int8_gives_numpys_grid(configured, side: int) -> None:
    def generations(xp, count: int) -> np.ndarray:
        grid = (xp.asarray(np.random.default_rng(5).random((side, side))) < 0.3).astype(np.int8)
        for _ in range(count):
            neighbours = sum(xp.roll(xp.roll(grid, i, 0), j, 1) for i in (-1, 0, 1) for j in (-1, 0, 1) if (i, j) != (0, 0))
            grid = ((neighbours == 3) | ((grid == 1) & (neighbours == 2))).astype(np.int8)
        return np.asarray(grid)

    np.testing.assert_array_equal(generations(snp, 6), generations(np, 6))

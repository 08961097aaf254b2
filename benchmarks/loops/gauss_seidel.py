"""Gauss-Seidel smoothing of a 2-D grid in place, one row per iteration.

Each row is replaced by the mean of itself and its four neighbours, reading the row above as
already updated in this sweep (the grid is overwritten in place, row after row).

Usage: python gauss_seidel.py [SIZE] [--steps N] [--seed S]   (N: sweeps)
"""

import argparse
import time

import numpy as np


def sweep(grid: np.ndarray, sweeps: int) -> None:
    """``sweeps`` in-place Gauss-Seidel sweeps over the interior of ``grid``."""
    for _ in range(sweeps):
        for i in range(1, grid.shape[0] - 1):
            grid[i, 1:-1] = 0.2 * (
                grid[i - 1, 1:-1] + grid[i, 1:-1] + grid[i + 1, 1:-1] + grid[i, :-2] + grid[i, 2:]
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=1000, help="grid points per side")
    parser.add_argument("--steps", type=int, default=5, help="sweeps")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    grid = rng.random((args.size, args.size))

    float(grid[0, 0])  # the set-up runs before the timer also where it is lazy
    start = time.perf_counter()
    sweep(grid, args.steps)
    checksum = float(np.sum(grid))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

"""Five-point Jacobi stencil: a fixed number of smoothing sweeps over a 2-D grid.

The grid starts as seeded random values; the boundary stays fixed while each
sweep replaces every interior point by the mean of itself and its four neighbours.

Usage: python jacobi_stencil.py [SIZE] [--iterations N] [--seed S]
"""

import argparse
import time

import numpy as np


def smooth(grid: np.ndarray, iterations: int) -> np.ndarray:
    """Apply ``iterations`` Jacobi sweeps to the interior of ``grid`` in place and return it."""
    for _ in range(iterations):
        grid[1:-1, 1:-1] = 0.2 * (
            grid[1:-1, 1:-1] + grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:]
        )
    return grid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=2000, help="grid points per side")
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    grid = rng.random((args.size, args.size))

    start = time.perf_counter()
    smooth(grid, args.iterations)
    checksum = float(np.sum(grid))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

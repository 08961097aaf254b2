"""Five-point Jacobi stencil (examples/jacobi_stencil.py) with the sweep evaluated by numexpr.

Usage: python jacobi_stencil_numexpr.py [SIZE] [--iterations N] [--seed S]
"""

import argparse
import time

import numexpr as ne
import numpy as np


def smooth(grid: np.ndarray, iterations: int) -> np.ndarray:
    """Apply ``iterations`` Jacobi sweeps to the interior of ``grid`` in place and return it."""
    work = np.empty((grid.shape[0] - 2, grid.shape[1] - 2))
    neighbours = {
        "center": grid[1:-1, 1:-1],
        "north": grid[:-2, 1:-1],
        "south": grid[2:, 1:-1],
        "west": grid[1:-1, :-2],
        "east": grid[1:-1, 2:],
    }
    for _ in range(iterations):
        ne.evaluate("0.2 * (center + north + south + west + east)", local_dict=neighbours, out=work)
        grid[1:-1, 1:-1] = work
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

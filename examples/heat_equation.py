"""Heat equation on a square plate, solved by Jacobi iteration until it converges.

The top edge is held at 40 degrees and the other three edges at -273.15 degrees.
Each sweep replaces every interior point by the mean of itself and its four
neighbours; the loop stops once one sweep changes the plate by less than epsilon
(mean absolute change per point).

Usage: python heat_equation.py [SIZE] [--epsilon E] [--max-iterations N]
"""

import argparse
import time

import numpy as np


def solve(size: int, epsilon: float, max_iterations: int) -> tuple[np.ndarray, int]:
    """Return the converged (size+2)-square grid, boundary included, and the sweeps it took."""
    grid = np.zeros((size + 2, size + 2))
    grid[:, 0] = -273.15
    grid[:, -1] = -273.15
    grid[-1, :] = -273.15
    grid[0, :] = 40.0

    center = grid[1:-1, 1:-1]
    north = grid[:-2, 1:-1]
    south = grid[2:, 1:-1]
    west = grid[1:-1, :-2]
    east = grid[1:-1, 2:]

    delta = epsilon + 1.0
    iterations = 0
    while delta > epsilon and iterations < max_iterations:
        work = 0.2 * (center + north + south + east + west)
        delta = np.sum(np.abs(work - center)) / center.size
        center[:] = work
        iterations += 1
    return grid, iterations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=500, help="interior points per side")
    parser.add_argument("--epsilon", type=float, default=0.02)
    parser.add_argument("--max-iterations", type=int, default=10_000)
    args = parser.parse_args()

    start = time.perf_counter()
    grid, iterations = solve(args.size, args.epsilon, args.max_iterations)
    checksum = float(np.sum(grid))
    elapsed = time.perf_counter() - start

    print(f"iterations: {iterations}")
    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

"""Conway's game of life on an ``int8`` grid: neighbours counted with ``np.roll``, the rules
applied with comparisons and boolean operators, as the textbook NumPy version writes it.

Usage: python game_of_life.py [SIZE] [--steps N] [--seed S]   (N: generations)
"""

import argparse
import time

import numpy as np


def generation(grid: np.ndarray) -> np.ndarray:
    """The next generation of ``grid`` (1 alive, 0 dead; the edges wrap around)."""
    neighbours = sum(np.roll(np.roll(grid, i, 0), j, 1) for i in (-1, 0, 1) for j in (-1, 0, 1) if (i, j) != (0, 0))
    return ((neighbours == 3) | ((grid == 1) & (neighbours == 2))).astype(np.int8)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=1024, help="rows and columns")
    parser.add_argument("--steps", type=int, default=10, help="generations")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    grid = (rng.random((args.size, args.size)) < 0.3).astype(np.int8)
    int(grid[0, 0])  # the set-up runs before the timer also where it is lazy

    start = time.perf_counter()
    for _ in range(args.steps):
        grid = generation(grid)
    checksum = float(np.sum(grid))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

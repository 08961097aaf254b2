"""Five-point Jacobi stencil (examples/jacobi_stencil.py) as a Dask array: one ``map_overlap``
per sweep (halo of one cell), threaded scheduler.

Usage: python jacobi_stencil_dask.py [SIZE] [--iterations N] [--seed S] [--chunk C]
"""

import argparse
import time

import dask
import dask.array as da
import numpy as np


def sweep(block: np.ndarray) -> np.ndarray:
    """One Jacobi sweep of a block with its one-cell halo; the outermost ring stays as it was."""
    swept = block.copy()
    swept[1:-1, 1:-1] = 0.2 * (
        block[1:-1, 1:-1] + block[:-2, 1:-1] + block[2:, 1:-1] + block[1:-1, :-2] + block[1:-1, 2:]
    )
    return swept


def smooth(grid: da.Array, iterations: int) -> da.Array:
    """``iterations`` sweeps; the global boundary has no halo, so it stays fixed."""
    for _ in range(iterations):
        grid = grid.map_overlap(sweep, depth=1, boundary="none", dtype=grid.dtype)
    return grid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=2000, help="grid points per side")
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--chunk", type=int, default=1024, help="chunk side (cells)")
    args = parser.parse_args()
    dask.config.set(scheduler="threads")

    rng = np.random.default_rng(args.seed)
    grid = rng.random((args.size, args.size))

    start = time.perf_counter()
    smoothed = smooth(da.from_array(grid, chunks=args.chunk), args.iterations)
    checksum = float(smoothed.sum().compute())
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

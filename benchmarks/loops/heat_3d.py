"""Three-dimensional heat equation: a seven-point stencil alternating between two grids.

Usage: python heat_3d.py [SIZE] [--steps N] [--seed S]   (N: time steps, two sweeps each)
"""

import argparse
import time

import numpy as np


def laplace_step(src: np.ndarray, dst: np.ndarray) -> None:
    """Write one explicit heat step of ``src`` into the interior of ``dst``."""
    c = src[1:-1, 1:-1, 1:-1]
    dst[1:-1, 1:-1, 1:-1] = (
        0.125 * (src[2:, 1:-1, 1:-1] - 2.0 * c + src[:-2, 1:-1, 1:-1])
        + 0.125 * (src[1:-1, 2:, 1:-1] - 2.0 * c + src[1:-1, :-2, 1:-1])
        + 0.125 * (src[1:-1, 1:-1, 2:] - 2.0 * c + src[1:-1, 1:-1, :-2])
        + c
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=100, help="grid points per side")
    parser.add_argument("--steps", type=int, default=10, help="time steps")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    a = rng.random((args.size,) * 3)
    b = a.copy()

    float(b[0, 0, 0])  # the set-up runs before the timer also where it is lazy
    start = time.perf_counter()
    for _ in range(args.steps):
        laplace_step(a, b)
        laplace_step(b, a)
    checksum = float(np.sum(a))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

"""One-dimensional Jacobi smoothing: a three-point average alternating between two arrays.

Usage: python jacobi_1d.py [SIZE] [--steps N] [--seed S]   (N: time steps, two sweeps each)
"""

import argparse
import time

import numpy as np


def jacobi(a: np.ndarray, b: np.ndarray, steps: int) -> None:
    """``steps`` pairs of sweeps, ``a`` into ``b`` and back."""
    for _ in range(steps):
        b[1:-1] = (a[:-2] + a[1:-1] + a[2:]) / 3.0
        a[1:-1] = (b[:-2] + b[1:-1] + b[2:]) / 3.0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=1_000_000, help="points")
    parser.add_argument("--steps", type=int, default=20, help="time steps")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    a = rng.random(args.size)
    b = a.copy()

    float(b[0])  # the set-up runs before the timer also where it is lazy
    start = time.perf_counter()
    jacobi(a, b, args.steps)
    checksum = float(np.sum(a))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

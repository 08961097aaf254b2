"""Rank-one updates of a matrix from vectors kept in NumPy (a Hebbian or Sherman-Morrison-style loop).

Usage: python rank_one_updates.py [SIZE] [--steps N] [--seed S]
(N: updates; the vectors are rows of two N x SIZE arrays)
"""

import argparse
import time

import numpy as np


def update(a: np.ndarray, us: np.ndarray, vs: np.ndarray, rate: float) -> None:
    """Add ``rate`` times the outer product of each pair of rows of ``us`` and ``vs`` to ``a`` in place."""
    for u, v in zip(us, vs):
        a += rate * np.outer(u, v)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=1000, help="rows and columns of the matrix")
    parser.add_argument("--steps", type=int, default=50, help="updates")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    n = args.size
    a = rng.random((n, n))
    us = rng.random((args.steps, n)) - 0.5
    vs = rng.random((args.steps, n)) - 0.5
    float(a[0, 0])  # the set-up runs before the timer also where it is lazy

    start = time.perf_counter()
    update(a, us, vs, 1e-3)
    checksum = float(np.sum(a))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

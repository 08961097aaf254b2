"""Cholesky factorisation ``A = L @ L.T`` computed in place, one column per iteration.

Usage: python cholesky.py [SIZE] [--steps N] [--repeat R] [--seed S]
(N: columns factored; R: matrices factored in turn)
"""

import argparse
import time

import numpy as np


def cholesky(a: np.ndarray, columns: int) -> None:
    """Overwrite the first ``columns`` columns of the lower triangle of ``a`` with L's."""
    for j in range(columns):
        a[j, j] = np.sqrt(a[j, j] - a[j, :j] @ a[j, :j])
        a[j + 1 :, j] = (a[j + 1 :, j] - a[j + 1 :, :j] @ a[j, :j]) / a[j, j]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=1000, help="rows of A")
    parser.add_argument("--steps", type=int, default=None, help="columns to factor")
    parser.add_argument("--repeat", type=int, default=1, help="matrices to factor")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    n = args.size
    b = rng.random((n, n))
    spd = b @ b.T + n * np.eye(n)
    columns = n if args.steps is None else min(n, args.steps)

    float(spd[0, 0])  # the set-up's product runs before the timer also where it is lazy
    start = time.perf_counter()
    checksum = 0.0
    for _ in range(args.repeat):
        a = spd.copy()
        cholesky(a, columns)
        checksum += float(np.sum(np.tril(a)))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

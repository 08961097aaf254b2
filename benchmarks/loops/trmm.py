"""Triangular matrix product ``B = alpha * A.T @ B`` (A unit lower triangular), one row at a time.

Usage: python trmm.py [SIZE] [--repeat R] [--steps N] [--seed S]   (N: rows of B updated; all by default)
"""

import argparse
import time

import numpy as np

ALPHA = 1.5


def trmm(a: np.ndarray, b: np.ndarray, rows: int) -> None:
    """Update the first ``rows`` rows of ``b`` in place (the rows below are read before written)."""
    for i in range(rows):
        b[i] += a[i + 1 :, i] @ b[i + 1 :]
    b *= ALPHA


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=1000, help="rows of A and B")
    parser.add_argument("--steps", type=int, default=None, help="rows to update")
    parser.add_argument("--repeat", type=int, default=1, help="times the whole computation runs")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    n = args.size
    a = np.tril(rng.random((n, n)), -1) / n
    b = rng.random((n, n))
    float(a[0, 0])  # the set-up runs before the timer also where it is lazy
    rows = n if args.steps is None else min(n, args.steps)

    start = time.perf_counter()
    checksum = 0.0
    for _ in range(args.repeat):
        result = b.copy()
        trmm(a, result, rows)
        checksum += float(np.sum(result))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

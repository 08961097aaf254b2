"""Symmetric rank-k update ``C = alpha * A @ A.T + beta * C`` (lower triangle), one row at a time.

Usage: python syrk.py [SIZE] [--repeat R] [--steps N] [--seed S]   (N: rows updated; all by default)
"""

import argparse
import time

import numpy as np

ALPHA, BETA = 1.5, 1.2


def syrk(c: np.ndarray, a: np.ndarray, rows: int) -> None:
    """Update the first ``rows`` rows of the lower triangle of ``c`` in place."""
    for i in range(rows):
        c[i, : i + 1] = BETA * c[i, : i + 1] + ALPHA * (a[: i + 1] @ a[i])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=1000, help="rows of A and C")
    parser.add_argument("--steps", type=int, default=None, help="rows to update")
    parser.add_argument("--repeat", type=int, default=1, help="times the whole computation runs")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    n = args.size
    a = rng.random((n, n // 2 + 1))
    c = rng.random((n, n))
    rows = n if args.steps is None else min(n, args.steps)

    float(c[0, 0])  # the set-up runs before the timer also where it is lazy
    start = time.perf_counter()
    checksum = 0.0
    for _ in range(args.repeat):
        result = c.copy()
        syrk(result, a, rows)
        checksum += float(np.sum(result))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

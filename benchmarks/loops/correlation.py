"""Correlation matrix of a data set filled column by column with chained assignments.

Usage: python correlation.py [SIZE] [--repeat R] [--steps N] [--seed S]
(SIZE variables, 5/4 SIZE observations; N: columns computed)
"""

import argparse
import time

import numpy as np


def correlation(data: np.ndarray, columns: int) -> np.ndarray:
    """The correlation of the columns of ``data`` (the first ``columns`` columns of it)."""
    n, m = data.shape
    mean = np.mean(data, axis=0)
    stddev = np.std(data, axis=0)
    stddev[stddev <= 0.1] = 1.0
    data = data - mean
    data /= np.sqrt(float(n)) * stddev
    corr = np.eye(m, dtype=data.dtype)
    for i in range(columns):
        corr[i + 1 : m, i] = corr[i, i + 1 : m] = data[:, i] @ data[:, i + 1 : m]
    return corr


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=1000, help="variables")
    parser.add_argument("--steps", type=int, default=None, help="columns to compute")
    parser.add_argument("--repeat", type=int, default=1, help="times the whole computation runs")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    m = args.size
    data = rng.random((m * 5 // 4, m))
    columns = m - 1 if args.steps is None else min(m - 1, args.steps)

    float(data[0, 0])  # the set-up runs before the timer also where it is lazy
    start = time.perf_counter()
    checksum = 0.0
    for _ in range(args.repeat):
        checksum += float(np.sum(correlation(data, columns)))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

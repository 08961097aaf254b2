"""Covariance matrix of a data set built column by column.

Usage: python covariance.py [SIZE] [--repeat R] [--steps N] [--seed S]
(SIZE variables, 5/4 SIZE observations; N: columns computed)
"""

import argparse
import time

import numpy as np


def covariance(data: np.ndarray, columns: int) -> np.ndarray:
    """The covariance of the columns of ``data`` (first ``columns`` columns of the lower half)."""
    n, m = data.shape
    data = data - np.mean(data, axis=0)
    cov = np.zeros((m, m))
    for i in range(columns):
        cov[i:, i] = data[:, i] @ data[:, i:] / (n - 1)
        cov[i, i:] = cov[i:, i]
    return cov


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
    columns = m if args.steps is None else min(m, args.steps)

    float(data[0, 0])  # the set-up runs before the timer also where it is lazy
    start = time.perf_counter()
    checksum = 0.0
    for _ in range(args.repeat):
        checksum += float(np.sum(covariance(data, columns)))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

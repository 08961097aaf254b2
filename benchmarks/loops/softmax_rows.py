"""Row-wise softmax of a matrix, one row per iteration (max-shifted for stability).

Usage: python softmax_rows.py [SIZE] [--repeat R] [--steps N] [--seed S]   (N: rows processed)
"""

import argparse
import time

import numpy as np


def softmax_rows(x: np.ndarray, rows: int) -> np.ndarray:
    """Softmax of each of the first ``rows`` rows of ``x`` (the others are left zero)."""
    out = np.zeros_like(x)
    for i in range(rows):
        e = np.exp(x[i] - np.max(x[i]))
        out[i] = e / np.sum(e)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=1000, help="rows and columns")
    parser.add_argument("--steps", type=int, default=None, help="rows to process")
    parser.add_argument("--repeat", type=int, default=1, help="times the whole computation runs")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    x = 10.0 * rng.standard_normal((args.size, args.size))
    rows = args.size if args.steps is None else min(args.size, args.steps)
    float(x[0, 0])  # the set-up runs before the timer also where it is lazy

    start = time.perf_counter()
    checksum = 0.0
    for _ in range(args.repeat):
        checksum += float(np.sum(softmax_rows(x, rows) * np.arange(args.size)))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

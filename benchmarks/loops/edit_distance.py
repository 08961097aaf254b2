"""Edit distance between two random DNA strings: the dynamic-programming table filled row by row.

Within a row, the insertion chain ``D[i, j] = D[i, j - 1] + 1`` is resolved by a running
minimum (``np.minimum.accumulate``), so each row is a handful of whole-row operations.

Usage: python edit_distance.py [SIZE] [--repeat R] [--steps N] [--seed S]   (N: rows of the table filled)
"""

import argparse
import time

import numpy as np


def edit_table(a: np.ndarray, b: np.ndarray, rows: int) -> np.ndarray:
    """The first ``rows`` + 1 rows of the edit-distance table of ``a`` against ``b``."""
    columns = np.arange(b.shape[0] + 1, dtype=np.float64)
    table = np.zeros((rows + 1, b.shape[0] + 1))
    table[0] = columns
    for i in range(1, rows + 1):
        candidates = np.empty(b.shape[0] + 1)
        candidates[0] = i
        candidates[1:] = np.minimum(table[i - 1, 1:] + 1.0, table[i - 1, :-1] + (b != a[i - 1]))
        table[i] = np.minimum.accumulate(candidates - columns) + columns
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=1000, help="length of each string")
    parser.add_argument("--steps", type=int, default=None, help="rows of the table to fill")
    parser.add_argument("--repeat", type=int, default=1, help="times the whole computation runs")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    a = rng.integers(0, 4, size=args.size)
    b = rng.integers(0, 4, size=args.size)
    rows = args.size if args.steps is None else min(args.size, args.steps)

    int(b[0])  # the set-up runs before the timer also where it is lazy
    start = time.perf_counter()
    checksum = 0.0
    for _ in range(args.repeat):
        table = edit_table(a, b, rows)
        checksum += float(table[-1, -1]) + float(np.sum(table))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

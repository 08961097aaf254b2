"""Sparse matrix-vector products in CSR form: gathered products summed per row with
``np.add.reduceat``, normalised and repeated (a power iteration).

Usage: python csr_spmv.py [SIZE] [--per-row K] [--steps N] [--seed S]
(SIZE rows and columns, K non-zeros in every row; N: products)
"""

import argparse
import time

import numpy as np


def spmv(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, x: np.ndarray) -> np.ndarray:
    """``A @ x`` for the CSR matrix (data, indices, indptr) whose rows are all non-empty."""
    return np.add.reduceat(data * x[indices], indptr[:-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=100_000, help="rows and columns")
    parser.add_argument("--per-row", type=int, default=16, help="non-zeros per row")
    parser.add_argument("--steps", type=int, default=10, help="products")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    n, k = args.size, args.per_row
    indptr = np.arange(0, n * k + 1, k)
    indices = np.sort(rng.integers(0, n, size=(n, k)), axis=1).ravel()
    data = rng.random(n * k)
    x = rng.random(n)
    int(indices[0])  # the set-up runs before the timer also where it is lazy

    start = time.perf_counter()
    for _ in range(args.steps):
        y = spmv(data, indices, indptr, x)
        x = y / np.sqrt(y @ y)
    checksum = float(np.sum(x))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

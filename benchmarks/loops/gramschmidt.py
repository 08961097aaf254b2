"""Modified Gram-Schmidt QR factorisation, one column per iteration.

Usage: python gramschmidt.py [SIZE] [--steps N] [--repeat R] [--seed S]
(N: columns orthogonalised; R: matrices factored in turn)
"""

import argparse
import time

import numpy as np


def gram_schmidt(a: np.ndarray, columns: int) -> tuple[np.ndarray, np.ndarray]:
    """Q and R of the first ``columns`` columns; ``a`` is overwritten with the residuals."""
    m, n = a.shape
    q = np.zeros((m, n))
    r = np.zeros((n, n))
    for k in range(columns):
        r[k, k] = np.sqrt(a[:, k] @ a[:, k])
        q[:, k] = a[:, k] / r[k, k]
        r[k, k + 1 :] = q[:, k] @ a[:, k + 1 :]
        a[:, k + 1 :] -= np.outer(q[:, k], r[k, k + 1 :])
    return q, r


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=1000, help="rows and columns of A")
    parser.add_argument("--steps", type=int, default=None, help="columns to orthogonalise")
    parser.add_argument("--repeat", type=int, default=1, help="matrices to factor")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    n = args.size
    matrix = rng.random((n, n)) + np.eye(n)
    float(matrix[0, 0])  # the set-up runs before the timer also where it is lazy
    columns = n if args.steps is None else min(n, args.steps)

    start = time.perf_counter()
    checksum = 0.0
    for _ in range(args.repeat):
        q, r = gram_schmidt(matrix.copy(), columns)
        checksum += float(np.sum(q)) + float(np.sum(r))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

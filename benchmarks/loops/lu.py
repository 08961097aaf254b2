"""LU factorisation without pivoting (Doolittle), a rank-1 update of the trailing block per step.

Usage: python lu.py [SIZE] [--steps N] [--repeat R] [--seed S]
(N: elimination steps; R: matrices factored in turn)
"""

import argparse
import time

import numpy as np


def lu(a: np.ndarray, steps: int) -> None:
    """Overwrite ``a`` with L (below the diagonal, unit diagonal implied) and U, ``steps`` steps."""
    for k in range(steps):
        a[k + 1 :, k] /= a[k, k]
        a[k + 1 :, k + 1 :] -= np.outer(a[k + 1 :, k], a[k, k + 1 :])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=1000, help="rows of A")
    parser.add_argument("--steps", type=int, default=None, help="elimination steps")
    parser.add_argument("--repeat", type=int, default=1, help="matrices to factor")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    n = args.size
    matrix = rng.random((n, n)) + n * np.eye(n)
    float(matrix[0, 0])  # the set-up runs before the timer also where it is lazy
    steps = n - 1 if args.steps is None else min(n - 1, args.steps)

    start = time.perf_counter()
    checksum = 0.0
    for _ in range(args.repeat):
        a = matrix.copy()
        lu(a, steps)
        checksum += float(np.sum(a))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

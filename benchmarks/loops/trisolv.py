"""Forward triangular solve ``L x = b`` by substitution, one unknown per iteration.

Usage: python trisolv.py [SIZE] [--repeat R] [--seed S]   (R: right-hand sides solved in turn)
"""

import argparse
import time

import numpy as np


def solve(lower: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The solution of ``lower @ x = b`` by forward substitution."""
    x = np.zeros_like(b)
    for i in range(b.shape[0]):
        x[i] = (b[i] - lower[i, :i] @ x[:i]) / lower[i, i]
    return x


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=2000, help="rows of L")
    parser.add_argument("--repeat", type=int, default=1, help="right-hand sides")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    n = args.size
    lower = np.tril(rng.random((n, n))) / n + np.eye(n)
    rhs = rng.random((args.repeat, n))
    float(lower[0, 0])  # the set-up runs before the timer also where it is lazy

    start = time.perf_counter()
    checksum = 0.0
    for r in range(args.repeat):
        checksum += float(np.sum(solve(lower, rhs[r])))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

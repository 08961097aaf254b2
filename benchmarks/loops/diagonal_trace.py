"""Scalar accumulation over a diagonal: ``trace += np.tanh(a[i, i])`` element by element, then
``a + trace``, repeated.

Usage: python diagonal_trace.py [SIZE] [--steps N] [--seed S]   (N: repetitions)
"""

import argparse
import time

import numpy as np


def step(a: np.ndarray) -> np.ndarray:
    """``a`` shifted by the sum of tanh over its diagonal, accumulated one element at a time."""
    trace = 0.0
    for i in range(a.shape[0]):
        trace += np.tanh(a[i, i])
    return a + trace / a.shape[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=2000, help="rows and columns")
    parser.add_argument("--steps", type=int, default=1, help="repetitions")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    a = rng.random((args.size, args.size))

    float(a[0, 0])  # the set-up runs before the timer also where it is lazy
    start = time.perf_counter()
    for _ in range(args.steps):
        a = step(a)
    checksum = float(np.sum(a))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

"""BiCG-like iteration: the products ``A @ p`` and ``r @ A`` in a short loop, normalised each step.

Usage: python bicg.py [SIZE] [--steps N] [--seed S]   (N: iterations)
"""

import argparse
import time

import numpy as np


def bicg(a: np.ndarray, p: np.ndarray, r: np.ndarray, steps: int) -> tuple[np.ndarray, np.ndarray]:
    """``steps`` normalised products with ``a`` from the right and from the left."""
    for _ in range(steps):
        q = a @ p
        s = r @ a
        p = s / np.sqrt(s @ s)
        r = q / np.sqrt(q @ q)
    return p, r


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=1000, help="rows and columns of A")
    parser.add_argument("--steps", type=int, default=10, help="iterations")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    n = args.size
    a = rng.random((n, n))
    p = rng.random(n)
    r = rng.random(n)

    float(a[0, 0])  # the set-up runs before the timer also where it is lazy
    start = time.perf_counter()
    p, r = bicg(a, p, r, args.steps)
    checksum = float(np.sum(p)) + float(np.sum(r))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

"""Escape-time fractal updated through boolean masks: only the points still bounded are iterated.

Each step selects the bounded points with a mask and updates them in place
(``z[m] = z[m] ** 2 + c[m]``); the checksum is the total number of iterations spent bounded.

Usage: python fractal_masks.py [SIZE] [--steps N] [--seed S]
"""

import argparse
import time

import numpy as np


def escape_counts(c: np.ndarray, steps: int) -> np.ndarray:
    """Iterations each point of ``c`` stays inside the radius-2 disc, up to ``steps``."""
    z = np.zeros_like(c)
    counts = np.zeros(c.shape)
    for _ in range(steps):
        m = np.abs(z) <= 2.0
        z[m] = z[m] ** 2 + c[m]
        counts[m] += 1.0
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=1000, help="pixels per side")
    parser.add_argument("--steps", type=int, default=30, help="escape iterations")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    real = np.linspace(-2.0, 0.6, args.size)
    imaginary = np.linspace(-1.3, 1.3, args.size)
    c = real[np.newaxis, :] + 1j * imaginary[:, np.newaxis] + 1e-3 * rng.random((args.size, args.size))
    complex(c[0, 0])  # the set-up runs before the timer also where it is lazy

    start = time.perf_counter()
    counts = escape_counts(c, args.steps)
    checksum = float(np.sum(counts))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

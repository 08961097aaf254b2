"""Two-dimensional finite-difference time-domain (FDTD) electromagnetic simulation.

Usage: python fdtd_2d.py [SIZE] [--steps N] [--seed S]   (N: time steps)
"""

import argparse
import time

import numpy as np


def fdtd(ex: np.ndarray, ey: np.ndarray, hz: np.ndarray, source: np.ndarray) -> None:
    """One time step per entry of ``source``, updating the three fields in place."""
    for t in range(source.shape[0]):
        ey[0, :] = source[t]
        ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
        ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
        hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=1000, help="grid points per side")
    parser.add_argument("--steps", type=int, default=10, help="time steps")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    shape = (args.size, args.size)
    ex, ey, hz = rng.random(shape), rng.random(shape), rng.random(shape)
    source = np.arange(args.steps, dtype=np.float64)

    float(hz[0, 0])  # the set-up runs before the timer also where it is lazy
    start = time.perf_counter()
    fdtd(ex, ey, hz, source)
    checksum = float(np.sum(ex)) + float(np.sum(ey)) + float(np.sum(hz))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

"""Mandelbrot escape counts (examples/mandelbrot.py) with each iteration evaluated by numexpr.

Usage: python mandelbrot_numexpr.py [SIZE] [--iterations N]
"""

import argparse
import time

import numexpr as ne
import numpy as np


def escape_counts(c: np.ndarray, max_iterations: int) -> np.ndarray:
    """Iterations each point of ``c`` stays bounded, up to ``max_iterations``."""
    state = {"c": c, "z": np.zeros_like(c), "counts": np.zeros(c.shape, dtype=np.int64)}
    for _ in range(max_iterations):
        state["bounded"] = ne.evaluate("real(z)**2 + imag(z)**2 <= 4.0", local_dict=state)
        ne.evaluate("counts + bounded", local_dict=state, out=state["counts"])
        state["z"] = ne.evaluate("where(bounded, z * z + c, z)", local_dict=state)
    return state["counts"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=1000, help="pixels per side")
    parser.add_argument("--iterations", type=int, default=50)
    args = parser.parse_args()

    real = np.linspace(-2.0, 0.6, args.size)
    imaginary = np.linspace(-1.3, 1.3, args.size)
    c = real[np.newaxis, :] + 1j * imaginary[:, np.newaxis]

    start = time.perf_counter()
    counts = escape_counts(c, args.iterations)
    checksum = float(np.sum(counts))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

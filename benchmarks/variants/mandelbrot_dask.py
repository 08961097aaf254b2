"""Mandelbrot escape counts (examples/mandelbrot.py) as Dask arrays, all iterations in one graph
computed on the threaded scheduler.

Usage: python mandelbrot_dask.py [SIZE] [--iterations N] [--chunk C]
"""

import argparse
import time

import dask
import dask.array as da
import numpy as np


def escape_counts(c: da.Array, max_iterations: int) -> da.Array:
    """Iterations each point of ``c`` stays bounded, up to ``max_iterations``."""
    z = da.zeros_like(c)
    counts = da.zeros(c.shape, dtype=np.int64, chunks=c.chunks)
    for _ in range(max_iterations):
        bounded = z.real**2 + z.imag**2 <= 4.0
        counts = counts + bounded
        z = da.where(bounded, z * z + c, z)
    return counts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=1000, help="pixels per side")
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--chunk", type=int, default=512, help="chunk side (pixels)")
    args = parser.parse_args()
    dask.config.set(scheduler="threads")

    real = np.linspace(-2.0, 0.6, args.size)
    imaginary = np.linspace(-1.3, 1.3, args.size)
    c = real[np.newaxis, :] + 1j * imaginary[:, np.newaxis]

    start = time.perf_counter()
    counts = escape_counts(da.from_array(c, chunks=args.chunk), args.iterations)
    checksum = float(da.sum(counts).compute())
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

"""What exact floating-point blame would cost a compiled kernel that overwrites an input in place.

A hand-written Numba kernel ``a = a * 0.5 + b * c`` over 512 x 1024 blocks of a 32-block array,
run as the engine runs a block: ``plain``; ``tested`` reads the status flags after each row (a
block could stop at the first row that met a condition and leave the rest to NumPy); ``saved``
also keeps each row's overwritten input in a row buffer first (what exact blame of that row
needs); ``staged`` computes each row into a buffer and stores it after the test; ``dry_run`` computes
each row once without storing, tests, and then computes and stores it (from cache); ``copied``
copies the block's input before the kernel. Alternating rounds; the minimum and median per
block, and each variant against ``plain``.

Usage: python -m benchmarks.fp_inplace_rows [--rounds N]
"""

from __future__ import annotations

import argparse
import ctypes
import ctypes.util
import time

import numba
import numpy as np

_LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
_TEST = _LIBM.fetestexcept
_TEST.restype = ctypes.c_int
_TEST.argtypes = [ctypes.c_int]
WATCHED = 0x01 | 0x04 | 0x08  # x86: invalid, divide by zero, overflow
ROWS, COLUMNS, BLOCKS = 512, 1024, 32


@numba.njit(error_model="numpy", nogil=True, inline="always")
def _update_row(a, b, c, r):
    for j in range(a.shape[1]):
        a[r, j] = a[r, j] * 0.5 + b[r, j] * c[r, j]


@numba.njit(error_model="numpy", nogil=True)
def plain(a, b, c, keep):
    for r in range(a.shape[0]):
        _update_row(a, b, c, r)
    return a.shape[0]


@numba.njit(error_model="numpy", nogil=True)
def tested(a, b, c, keep):
    for r in range(a.shape[0]):
        _update_row(a, b, c, r)
        if _TEST(WATCHED):
            return r
    return a.shape[0]


@numba.njit(error_model="numpy", nogil=True)
def saved(a, b, c, keep):
    for r in range(a.shape[0]):
        for j in range(a.shape[1]):
            keep[0, j] = a[r, j]
        for j in range(a.shape[1]):
            a[r, j] = keep[0, j] * 0.5 + b[r, j] * c[r, j]
        if _TEST(WATCHED):
            return r
    return a.shape[0]


@numba.njit(error_model="numpy", nogil=True)
def staged(a, b, c, keep):
    for r in range(a.shape[0]):
        for j in range(a.shape[1]):
            keep[0, j] = a[r, j] * 0.5 + b[r, j] * c[r, j]
        if _TEST(WATCHED):
            return r
        for j in range(a.shape[1]):
            a[r, j] = keep[0, j]
    return a.shape[0]


@numba.njit(error_model="numpy", nogil=True)
def copied(a, b, c, keep):
    for r in range(a.shape[0]):
        for j in range(a.shape[1]):
            keep[r, j] = a[r, j]
    for r in range(a.shape[0]):
        _update_row(a, b, c, r)
    return a.shape[0]


@numba.njit(error_model="numpy", nogil=True)
def dry_run(a, b, c, keep):
    for r in range(a.shape[0]):
        unordered = 0
        for j in range(a.shape[1]):
            value = a[r, j] * 0.5 + b[r, j] * c[r, j]
            unordered += value != value  # keeps the computation; an unordered compare signals nothing
        keep[0, 0] = unordered
        if _TEST(WATCHED):
            return r
        _update_row(a, b, c, r)
    return a.shape[0]


VARIANTS = {"plain": plain, "tested": tested, "saved": saved, "staged": staged, "dry_run": dry_run, "copied": copied}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    a, b, c = (rng.random((BLOCKS * ROWS, COLUMNS)) for _ in range(3))
    keep = np.empty((ROWS, COLUMNS))

    def per_block(kernel) -> float:
        started = time.perf_counter()
        for block in range(BLOCKS):
            rows = slice(block * ROWS, (block + 1) * ROWS)
            kernel(a[rows], b[rows], c[rows], keep)
        return (time.perf_counter() - started) / BLOCKS

    times: dict[str, list[float]] = {name: [] for name in VARIANTS}
    for kernel in VARIANTS.values():
        per_block(kernel)  # compiled
    for _ in range(args.rounds):
        for name, kernel in VARIANTS.items():
            times[name].append(per_block(kernel))
    plain_min, plain_median = min(times["plain"]), float(np.median(times["plain"]))
    for name, measured in times.items():
        low, middle = min(measured), float(np.median(measured))
        print(
            f"{name:7s} min {low * 1e6:7.1f} µs per block, median {middle * 1e6:7.1f} "
            f"({(low / plain_min - 1) * 100:+5.1f}% min, {(middle / plain_median - 1) * 100:+5.1f}% median)"
        )


if __name__ == "__main__":
    main()

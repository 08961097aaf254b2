"""Loops that only index rows of a large array and hand them on, under NumPy and ``shoal.numpy``.

Three arrays of ``--side`` x ``--side`` (above the eager threshold, so lazy under Shoal): a
random draw, a computed result still pending in the batch, and a settled one. Each loop takes
``rows = [a[i, 1:-1] for i in ...]`` and then sums the last row with Python's ``sum`` (no Shoal
operation touches a row), ``--loops`` times over all rows. NumPy and Shoal alternate within each
repetition; the report gives the median time per row and the ratio.

Run: ``.venv/bin/python -m benchmarks.row_views [--side 1000] [--loops 5] [--repeats 7]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy

import shoal.numpy

MAKERS: dict[str, Callable[[ModuleType, int], Any]] = {
    "random draw": lambda np, side: np.random.default_rng(1).random((side, side)),
    "pending result": lambda np, side: np.arange(float(side * side)).reshape(side, side) / 3.0,
    "settled result": lambda np, side: _settled(np.arange(float(side * side)).reshape(side, side) * 0.5),
}


def _settled(array: Any) -> Any:
    float(array[0, 0])
    return array


def rows_loop(np: ModuleType, make: Callable[[ModuleType, int], Any], side: int, loops: int) -> tuple[float, float]:
    """Seconds per row of the indexing loops, and a checksum of the rows read."""
    array = make(np, side)
    started = time.perf_counter()
    total = 0.0
    for _ in range(loops):
        rows = [array[i, 1:-1] for i in range(side)]
        total += sum(float(value) for value in rows[-1][:8])
    return (time.perf_counter() - started) / (loops * side), total


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=1000)
    parser.add_argument("--loops", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    print("| array | NumPy µs/row | Shoal µs/row | Shoal / NumPy |")
    print("|---|---:|---:|---:|")
    for name, make in MAKERS.items():
        times: dict[str, list[float]] = {"numpy": [], "shoal": []}
        for repeat in range(args.repeats):
            order = [("numpy", numpy), ("shoal", shoal.numpy)]
            for label, np in order if repeat % 2 == 0 else order[::-1]:
                seconds, checksum = rows_loop(np, make, args.side, args.loops)
                times[label].append(seconds)
                times.setdefault(f"{label} checksum", []).append(checksum)
        if len(set(times["numpy checksum"] + times["shoal checksum"])) != 1:
            raise SystemExit(f"{name}: checksums differ")
        numpy_us, shoal_us = (statistics.median(times[label]) * 1e6 for label in ("numpy", "shoal"))
        print(f"| {name} | {numpy_us:.3f} | {shoal_us:.3f} | {shoal_us / numpy_us:.2f}x |")


if __name__ == "__main__":
    main()

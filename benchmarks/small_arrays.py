"""Per-operation overhead on small arrays: a loop of element-wise operations on 1,000-element
arrays under plain NumPy and under ``shoal.numpy``, alternating, several repetitions, medians.

Run: ``.venv/bin/python -m benchmarks.small_arrays [--ops 100000] [--size 1000] [--repeats 7]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from types import ModuleType

import numpy

import shoal.numpy


def workload(np: ModuleType, operations: int, size: int) -> float:
    """``operations`` element-wise operations on ``size``-element arrays; returns a checksum."""
    a = np.linspace(0.0, 1.0, size)
    b = np.ones(size)
    for _ in range(operations // 4):
        c = a * b
        c += 1.0
        b = np.sqrt(c)
        a = 0.5 * a + 0.25 * b
    return float(a.sum() + b.sum())


def measure(np: ModuleType, operations: int, size: int) -> tuple[float, float]:
    start = time.perf_counter()
    checksum = workload(np, operations, size)
    return time.perf_counter() - start, checksum


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=100_000)
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    times: dict[str, list[float]] = {"numpy": [], "shoal": []}
    checksums: dict[str, float] = {}
    for _ in range(args.repeats):
        for name, module in (("numpy", numpy), ("shoal", shoal.numpy)):
            elapsed, checksums[name] = measure(module, args.ops, args.size)
            times[name].append(elapsed)
    base = statistics.median(times["numpy"])
    print(f"{args.ops} operations on {args.size}-element float64 arrays, {args.repeats} alternating repetitions")
    print("| tool | median s | ratio to NumPy | checksum |")
    print("|---|---|---|---|")
    for name in times:
        median = statistics.median(times[name])
        print(f"| {name} | {median:.3f} | {median / base:.2f}x | {checksums[name]:.12g} |")
    if checksums["numpy"] != checksums["shoal"]:
        raise SystemExit("checksums differ")


if __name__ == "__main__":
    main()

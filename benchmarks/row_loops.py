"""Loops over the rows of a large array, as NumPy programs write them, under NumPy and Shoal.

Each pattern runs a loop over the 1000 rows of a ``--side`` x ``--side`` array (above the eager
threshold, so lazy under Shoal): rows only indexed and kept, and rows handed to NumPy functions
(``np.cumsum(a[i])``, ``np.sort(a[i])``, ``a[i].astype(...)``, ...). The arrays are made by
``--source``: a random draw, a result still pending in the batch, or a settled result. NumPy
and Shoal alternate within each repetition; the report gives each one's median time per row and
the ratio, and checks that both computed the same checksum.

Run: ``.venv/bin/python -m benchmarks.row_loops [--side 1000] [--repeats 7] [--source random]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

from benchmarks.side_by_side import measured

SOURCES: dict[str, Callable[[ModuleType, int], Any]] = {
    "random": lambda np, side: np.random.default_rng(1).random((side, side)),
    "pending": lambda np, side: np.arange(float(side * side)).reshape(side, side) / (side * side),
    "settled": lambda np, side: _settled(np.arange(float(side * side)).reshape(side, side) / (side * side)),
}


def _settled(array: Any) -> Any:
    float(array[0, 0])
    return array


def _kept(np: ModuleType, a: Any) -> float:
    rows = [a[i, 1:-1] for i in range(a.shape[0])]
    return float(sum(float(value) for value in rows[-1][:8]))


PATTERNS: dict[str, Callable[[ModuleType, Any], float]] = {
    "rows kept `[a[i, 1:-1] for i ...]`": _kept,
    "`np.cumsum(a[i])[-1]`": lambda np, a: sum(float(np.cumsum(a[i])[-1]) for i in range(a.shape[0])),
    "`np.sort(a[i])[10]`": lambda np, a: sum(float(np.sort(a[i])[10]) for i in range(a.shape[0])),
    "`np.concatenate([a[i, :5], a[i - 1, :5]])[7]`": lambda np, a: sum(float(np.concatenate([a[i, :5], a[i - 1, :5]])[7]) for i in range(a.shape[0])),
    "`a[i].astype(np.int64)[3]`": lambda np, a: sum(int(a[i].astype(np.int64)[3] * 0 + a[i, 3] * 1000) for i in range(a.shape[0])),
    "`a[i].copy()[2]`": lambda np, a: sum(float(a[i].copy()[2]) for i in range(a.shape[0])),
    "`np.where(a[i] > 0.5, a[i], 0.0)[3]`": lambda np, a: sum(float(np.where(a[i] > 0.5, a[i], 0.0)[3]) for i in range(a.shape[0])),
    "`np.clip(a[i], 0.2, 0.8)[4]`": lambda np, a: sum(float(np.clip(a[i], 0.2, 0.8)[4]) for i in range(a.shape[0])),
    "`a.T[i][0]`": lambda np, a: sum(float(a.T[i][0]) for i in range(a.shape[0])),
    "`a[:, j] = j`": lambda np, a: _assign_columns(a),
    "`a.item(i, 7)`": lambda np, a: sum(a.item(i, 7) for i in range(a.shape[0])),
}


def _assign_columns(a: Any) -> float:
    for j in range(a.shape[1]):
        a[:, j] = j
    return float(a[3, 7])


def per_row(np: ModuleType, source: str, pattern: Callable[[ModuleType, Any], float], side: int) -> tuple[float, float]:
    """Seconds per row of ``pattern`` over an array made by ``source``, and its checksum."""
    array = SOURCES[source](np, side)
    started = time.perf_counter()
    checksum = pattern(np, array)
    return (time.perf_counter() - started) / side, checksum


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=1000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--source", choices=tuple(SOURCES), default="random")
    args = parser.parse_args(argv)
    print(f"Rows of a {args.side} x {args.side} array ({args.source}), {args.repeats} alternating repetitions, medians")
    print("| loop | NumPy µs/row | Shoal µs/row | Shoal / NumPy |")
    print("|---|---:|---:|---:|")
    for name, pattern in PATTERNS.items():
        runs = measured(args.repeats, lambda np, pattern=pattern: per_row(np, args.source, pattern, args.side))
        times = {label: [seconds for seconds, _ in pairs] for label, pairs in runs.items()}
        checksums = {checksum for pairs in runs.values() for _, checksum in pairs}
        if len(checksums) != 1:
            raise SystemExit(f"{name}: checksums differ: {sorted(checksums)}")
        numpy_us, shoal_us = (statistics.median(times[label]) * 1e6 for label in ("numpy", "shoal"))
        print(f"| {name} | {numpy_us:.2f} | {shoal_us:.2f} | {shoal_us / numpy_us:.2f}x |")


if __name__ == "__main__":
    main()

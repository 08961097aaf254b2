"""Operations on a held lazy grid against the same operations on a NumPy grid (µs per call).

A lazy 1000 x 1000 grid is made settled and then held (``shoal/held.py``: its memory in the
engine handed to NumPy after a run of settled accesses); each operation then runs over rows
``1..998`` of it and of a NumPy grid with the same values, the two alternating, best of
``--repeats`` loops each. With ``--settled`` the grid is indexed through settled views alone
(holding off), for comparison.

Run: ``python -m benchmarks.held_ops [--repeats 7] [--settled]``.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from typing import Any

import numpy

import shoal.numpy as snp
from shoal import held, runtime

SIDE = 1000


def _gauss_seidel_row(a: Any, i: int) -> None:
    a[i, 1:-1] = 0.2 * (a[i - 1, 1:-1] + a[i, 1:-1] + a[i + 1, 1:-1] + a[i, :-2] + a[i, 2:])


def _element_write(a: Any, i: int) -> None:
    a[i, 3] = 1.5


def _row_write(a: Any, i: int) -> None:
    a[i, 1:-1] = a[i - 1, 1:-1]


OPERATIONS: list[tuple[str, Callable[[Any, int], Any]]] = [
    ("element read `g[i, i]`", lambda a, i: a[i, i]),
    ("row view `g[i, 1:-1]`", lambda a, i: a[i, 1:-1]),
    ("element write `g[i, 3] = 1.5`", _element_write),
    ("row write `g[i, 1:-1] = g[i - 1, 1:-1]`", _row_write),
    ("Gauss-Seidel row (6 indexings, 5 NumPy ops)", _gauss_seidel_row),
]


def _loop(operation: Callable[[Any, int], Any], grid: Any) -> float:
    started = time.perf_counter()
    for i in range(1, SIDE - 1):
        operation(grid, i)
    return (time.perf_counter() - started) / (SIDE - 2) * 1e6


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--settled", action="store_true", help="settled views only: no base is held")
    args = parser.parse_args(argv)
    if args.settled:
        held.HOLD_RUN = 1 << 62
    values = numpy.random.default_rng(0).random((SIDE, SIDE))
    plain = values.copy()
    lazy = snp.ones((SIDE, SIDE)) * values
    runtime.flush()
    for i in range(64):
        lazy[i, 1:-1] + 0.0  # settled accesses: the run that holds the base
    holding = bool(runtime.current().held)
    print(f"| operation ({'held' if holding else 'settled views'}) | Shoal µs | NumPy µs | Shoal / NumPy |")
    print("|---|---:|---:|---:|")
    for label, operation in OPERATIONS:
        shoal_best = numpy_best = float("inf")
        for _ in range(args.repeats):
            shoal_best = min(shoal_best, _loop(operation, lazy))
            numpy_best = min(numpy_best, _loop(operation, plain))
        print(f"| {label} | {shoal_best:.3f} | {numpy_best:.3f} | {shoal_best / numpy_best:.2f}x |")


if __name__ == "__main__":
    main()

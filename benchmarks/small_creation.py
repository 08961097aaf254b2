"""Creating small arrays, as loops do (``np.arange(n)``, ``np.array([x, y])``, ``np.zeros(3)``,
small draws), under plain NumPy and under ``shoal.numpy``: nanoseconds per call, the two
alternating, several repetitions, medians.

Run: ``.venv/bin/python -m benchmarks.small_creation [--calls 20000] [--repeats 7]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy

from benchmarks.side_by_side import measured

PROTOTYPE = numpy.ones((30, 30))
POINT = [1.0, 2.0, 3.0]

CALLS: dict[str, Callable[[ModuleType, Any], Any]] = {
    "`np.arange(10)`": lambda np, rng: np.arange(10),
    "`np.arange(0.0, 1.0, 0.1)`": lambda np, rng: np.arange(0.0, 1.0, 0.1),
    "`np.linspace(0, 1, 10)`": lambda np, rng: np.linspace(0, 1, 10),
    "`np.zeros(5)`": lambda np, rng: np.zeros(5),
    "`np.empty(5)`": lambda np, rng: np.empty(5),
    "`np.full(5, 2.0)`": lambda np, rng: np.full(5, 2.0),
    "`np.array([1.0, 2.0, 3.0])`": lambda np, rng: np.array(POINT),
    "`np.empty_like(a)` (30 x 30)": lambda np, rng: np.empty_like(PROTOTYPE),
    "`np.zeros_like(a)` (30 x 30)": lambda np, rng: np.zeros_like(PROTOTYPE),
    "`np.full_like(a, 3.0)` (30 x 30)": lambda np, rng: np.full_like(PROTOTYPE, 3.0),
    "`rng.random(5)`": lambda np, rng: rng.random(5),
    "`rng.normal(size=5)`": lambda np, rng: rng.normal(size=5),
}


def per_call(np: ModuleType, call: Callable[[ModuleType, Any], Any], calls: int) -> float:
    """Seconds per call of ``call``."""
    rng = np.random.default_rng(0)
    started = time.perf_counter()
    for _ in range(calls):
        call(np, rng)
    return (time.perf_counter() - started) / calls


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    print(f"{args.calls} calls, {args.repeats} alternating repetitions, medians")
    print("| call | NumPy ns | Shoal ns | Shoal / NumPy |")
    print("|---|---:|---:|---:|")
    for name, call in CALLS.items():
        times = measured(args.repeats, lambda np, call=call: per_call(np, call, args.calls))
        numpy_ns, shoal_ns = (statistics.median(times[label]) * 1e9 for label in ("numpy", "shoal"))
        print(f"| {name} | {numpy_ns:.0f} | {shoal_ns:.0f} | {shoal_ns / numpy_ns:.2f}x |")


if __name__ == "__main__":
    main()

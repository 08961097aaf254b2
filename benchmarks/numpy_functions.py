"""NumPy functions written in Python, on large arrays, under NumPy and ``shoal.numpy``.

``tril``, ``isclose``, ``average``, ``array_equal`` and the NaN-ignoring reductions are Python
code in NumPy; on lazy arrays Shoal runs that code with its own names (``docs/decisions.md``).
Each case makes its inputs, settles them, then times the call and the read of its answer; both
modules run in this process, alternating, and the medians are reported.

Usage: python -m benchmarks.numpy_functions [--size N] [--repeats R] [--output FILE]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

from benchmarks.side_by_side import measured

CASES: dict[str, Callable[[ModuleType, Any, Any], Any]] = {
    "np.sum(np.tril(a))": lambda np, a, b: float(np.sum(np.tril(a))),
    "np.allclose(a, b)": lambda np, a, b: bool(np.allclose(a, b)),
    "np.isclose(a, b).sum()": lambda np, a, b: int(np.isclose(a, b).sum()),
    "np.average(a)": lambda np, a, b: float(np.average(a)),
    "np.array_equal(a, b)": lambda np, a, b: bool(np.array_equal(a, b)),
    "np.nanmean(n)": lambda np, a, n: float(np.nanmean(n)),
    "np.nanmean(n, axis=0).sum()": lambda np, a, n: float(np.nanmean(n, axis=0).sum()),
    "np.nanstd(n)": lambda np, a, n: float(np.nanstd(n)),
    "np.nanmax(n)": lambda np, a, n: float(np.nanmax(n)),
}
NEEDS_NANS = {"np.nanmean(n)", "np.nanmean(n, axis=0).sum()", "np.nanstd(n)", "np.nanmax(n)"}


def _timed(case: Callable[[ModuleType, Any, Any], Any], size: int, with_nans: bool) -> Callable[[ModuleType], float]:
    def run(np: ModuleType) -> float:
        a = np.random.default_rng(1).random((size, size))
        b = a + 1e-12
        if with_nans:
            b = np.where(np.random.default_rng(2).random((size, size)) < 0.05, np.nan, a)
        float(a[0, 0])
        float(b[0, 0])
        best = float("inf")
        for _ in range(3):
            started = time.perf_counter()
            case(np, a, b)
            best = min(best, time.perf_counter() - started)
        return best

    return run


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=4000, help="rows and columns of the arrays")
    parser.add_argument("--repeats", type=int, default=3, help="alternating repetitions (medians)")
    parser.add_argument("--output", type=Path, default=Path("benchmarks/results/numpy_functions.md"))
    args = parser.parse_args()
    lines = [
        "# NumPy functions written in Python, NumPy against shoal.numpy",
        "",
        f"`python -m benchmarks.numpy_functions --size {args.size} --repeats {args.repeats}`: {args.size} x {args.size} float64,"
        " the best of 3 calls in each repetition, medians over the alternating repetitions (ms).",
        "",
        "| call | NumPy ms | Shoal ms | Shoal / NumPy |",
        "|---|---:|---:|---:|",
    ]
    for name, case in CASES.items():
        times = measured(args.repeats, _timed(case, args.size, name in NEEDS_NANS))
        numpy_ms, shoal_ms = (statistics.median(times[label]) * 1e3 for label in ("numpy", "shoal"))
        lines.append(f"| `{name}` | {numpy_ms:.2f} | {shoal_ms:.2f} | {shoal_ms / numpy_ms:.2f}x |")
        print(lines[-1], flush=True)
    args.output.write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()

"""Large products and identity matrices, where NumPy takes shortcuts, under NumPy and Shoal.

NumPy computes ``x @ x.T`` and ``x.T @ x`` with BLAS ``syrk`` (one triangle, mirrored) and
``np.eye`` by writing only the diagonal into zeroed pages. Each case runs on a lazy ``--side`` x
``--side`` operand in one process, NumPy and Shoal alternating within each repetition; the
report gives each one's median time, the ratio, and checks that the checksums agree.

Run: ``.venv/bin/python -m benchmarks.large_products [--side 4000] [--repeats 5]``
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


def _gram(np: ModuleType, x: Any) -> Any:
    return x @ x.T


def _covariance(np: ModuleType, x: Any) -> Any:
    return x.T @ x


def _product(np: ModuleType, x: Any) -> Any:
    return x @ (x + 1.0)


def _eye(np: ModuleType, x: Any) -> Any:
    return np.eye(x.shape[0]) * 3.0 + x


CASES: dict[str, Callable[[ModuleType, Any], Any]] = {
    "`x @ x.T`": _gram,
    "`x.T @ x`": _covariance,
    "`x @ (x + 1)` (no shortcut)": _product,
    "`np.eye(n) * 3 + x`": _eye,
}


def once(np: ModuleType, case: Callable[[ModuleType, Any], Any], side: int) -> tuple[float, float]:
    """Seconds of ``case`` on a fresh lazy operand (its draw outside the time), and a checksum
    (the result's symmetry is part of it: an asymmetric ``x @ x.T`` does not match)."""
    x = np.random.default_rng(3).random((side, side))
    float(x[0, 0])
    started = time.perf_counter()
    result = case(np, x)
    corner = float(result[side - 1, side - 2] - result[side - 2, side - 1])
    seconds = time.perf_counter() - started
    return seconds, round(float(numpy.asarray(result[:: side // 7, :: side // 5]).sum()), 6) + corner


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=4000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    print(f"{args.side} x {args.side} operands, {args.repeats} alternating repetitions, medians")
    print("| case | NumPy s | Shoal s | Shoal / NumPy |")
    print("|---|---:|---:|---:|")
    for name, case in CASES.items():
        runs = measured(args.repeats, lambda np, case=case: once(np, case, args.side))
        times = {label: [seconds for seconds, _ in pairs] for label, pairs in runs.items()}
        expected, got = (sorted({checksum for _, checksum in runs[label]}) for label in ("numpy", "shoal"))
        if len(expected) != 1 or len(got) != 1 or not numpy.isclose(expected[0], got[0], rtol=1e-9, atol=0):
            raise SystemExit(f"{name}: checksums differ: NumPy {expected}, Shoal {got}")
        numpy_s, shoal_s = (statistics.median(times[label]) for label in ("numpy", "shoal"))
        print(f"| {name} | {numpy_s:.3f} | {shoal_s:.3f} | {shoal_s / numpy_s:.2f}x |")


if __name__ == "__main__":
    main()

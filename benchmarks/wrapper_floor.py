"""The floor of any array type written in Python, on loops of operations on tiny arrays.

Issue 14 asks that with every array lazy (``SHOAL_EAGER_THRESHOLD=0``) no loop of the suite be
slower than 2x NumPy. On the edit-distance table (``benchmarks/loops/edit_distance.py``: a dozen
NumPy calls a row on rows of a few hundred elements, 0.3-0.6 µs each) that bound is below what a
Python-level array type can reach at all: this benchmark runs the same row loop on plain NumPy
arrays, on :class:`PassThrough` (an array type that does nothing but unwrap its operands in
``__array_ufunc__``, call NumPy and wrap the result: no recording, no bookkeeping) and on Shoal's
lazy arrays with every array lazy, alternating, and prints microseconds a row and the ratios to
NumPy.

Run: ``python -m benchmarks.wrapper_floor [--size 200] [--repeats 5]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy

os.environ.setdefault("SHOAL_EAGER_THRESHOLD", "0")  # before shoal.numpy makes its runtime

import shoal.numpy


class PassThrough:
    """An array type that only forwards to NumPy: the least a Python-level array type costs."""

    __slots__ = ("a",)

    def __init__(self, a: Any) -> None:
        self.a = a

    def __array_ufunc__(self, ufunc: numpy.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
        unwrapped = [value.a if type(value) is PassThrough else value for value in inputs]
        return PassThrough(getattr(ufunc, method)(*unwrapped, **kwargs))

    def __add__(self, other: Any) -> Any:
        return numpy.add(self, other)

    def __sub__(self, other: Any) -> Any:
        return numpy.subtract(self, other)

    def __ne__(self, other: Any) -> Any:  # type: ignore[override]
        return numpy.not_equal(self, other)

    def __getitem__(self, key: Any) -> Any:
        return PassThrough(self.a[key])

    def __setitem__(self, key: Any, value: Any) -> None:
        self.a[key] = value.a if type(value) is PassThrough else value

    @property
    def shape(self) -> tuple[int, ...]:
        return self.a.shape


def edit_rows(np: Any, wrap: Callable[[Any], Any], a: Any, b: Any, rows: int) -> Any:
    """``benchmarks/loops/edit_distance.py``'s table, its arrays made by ``wrap``."""
    columns = wrap(np.arange(b.shape[0] + 1, dtype=numpy.float64))
    table = wrap(np.zeros((rows + 1, b.shape[0] + 1)))
    table[0] = columns
    for i in range(1, rows + 1):
        candidates = wrap(np.empty(b.shape[0] + 1))
        candidates[0] = i
        candidates[1:] = np.minimum(table[i - 1, 1:] + 1.0, table[i - 1, :-1] + (b != a[i - 1]))
        table[i] = np.minimum.accumulate(candidates - columns) + columns
    return table


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=200, help="length of each string (rows of the table)")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args(argv)
    rng = numpy.random.default_rng(42)
    a, b = rng.integers(0, 4, size=args.size), rng.integers(0, 4, size=args.size)
    tools: dict[str, Callable[[], Any]] = {
        "numpy": lambda: edit_rows(numpy, lambda x: x, a, b, args.size),
        "pass-through wrapper": lambda: edit_rows(numpy, PassThrough, PassThrough(a), PassThrough(b), args.size),
        "shoal, every array lazy": lambda: edit_rows(shoal.numpy, lambda x: x, shoal.numpy.asarray(a), shoal.numpy.asarray(b), args.size),
    }
    expected = tools["numpy"]()
    assert numpy.array_equal(numpy.asarray(tools["shoal, every array lazy"]()), expected)
    assert numpy.array_equal(tools["pass-through wrapper"]().a, expected)
    seconds: dict[str, list[float]] = {name: [] for name in tools}
    for _ in range(args.repeats):
        for name, run in tools.items():
            started = time.perf_counter()
            run()
            seconds[name].append(time.perf_counter() - started)
    base = statistics.median(seconds["numpy"])
    print(f"Edit-distance rows of {args.size + 1} elements, {args.repeats} alternating repetitions, medians.")
    print("| arrays | µs a row | ratio to NumPy |")
    print("|---|---:|---:|")
    for name, values in seconds.items():
        median = statistics.median(values)
        print(f"| {name} | {median / args.size * 1e6:.2f} | {median / base:.2f}x |")


if __name__ == "__main__":
    main()

"""The memory-bandwidth roof: a STREAM triad ``a = b + s * c`` over arrays far larger than cache.

A NumPy triad is itself limited by its temporary (``s * c`` is written and read back), so the
roof is measured with a Numba-compiled parallel loop that uses every core, as STREAM does with
OpenMP. Traffic is counted the STREAM way: 24 bytes per element (two reads, one write). Without
Numba the roof falls back to NumPy's copy bandwidth (16 bytes per element, one core), and says so.

Run alone: ``python -m shoal.bench.stream [--elements N] [--repeats R]``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

DEFAULT_ELEMENTS = 1 << 25  # 256 MiB per float64 array, three arrays: far beyond any cache
DEFAULT_REPEATS = 10
TRIAD_BYTES_PER_ELEMENT = 3 * 8  # counted the STREAM way: two reads, one write


@dataclass(frozen=True)
class Roof:
    """Measured bandwidth and how it was measured."""

    bytes_per_second: float
    method: str  # "numba-triad" or "numpy-copy"
    threads: int
    elements: int

    @property
    def gigabytes_per_second(self) -> float:
        return self.bytes_per_second / 1e9

    def describe(self) -> str:
        if self.method == "numba-triad":
            how = f"STREAM triad, Numba parallel loop on {self.threads} threads"
        else:
            how = "NumPy copy on one thread (Numba absent: STREAM triad not measured)"
        return f"{self.gigabytes_per_second:.1f} GB/s ({how}, {self.elements:,} float64 elements)"


def _best_seconds(kernel, repeats: int) -> float:
    kernel()  # first touch and compilation
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        kernel()
        best = min(best, time.perf_counter() - start)
    return best


def numba_triad(elements: int) -> tuple[Callable[[], None], Callable[[], bool]]:
    """A compiled parallel triad over fresh arrays (first touched in parallel) and its check."""
    import numba
    import numpy as np

    @numba.njit(parallel=True, fastmath=False, cache=False)
    def triad(a: np.ndarray, b: np.ndarray, c: np.ndarray, scalar: float) -> None:
        for i in numba.prange(a.size):
            a[i] = b[i] + scalar * c[i]

    @numba.njit(parallel=True, cache=False)
    def fill(x: np.ndarray, value: float) -> None:
        for i in numba.prange(x.size):
            x[i] = value

    # Allocate without touching, then first-touch in parallel so pages spread over all cores.
    a, b, c = (np.empty(elements) for _ in range(3))
    for array, value in ((a, 0.0), (b, 1.0), (c, 2.0)):
        fill(array, value)
    return (lambda: triad(a, b, c, 3.0)), (lambda: a[elements // 2] == 7.0)


def _numba_triad(elements: int, repeats: int) -> Roof:
    import numba

    run, correct = numba_triad(elements)
    seconds = _best_seconds(run, repeats)
    if not correct():
        raise RuntimeError("STREAM triad produced a wrong result")
    return Roof(TRIAD_BYTES_PER_ELEMENT * elements / seconds, "numba-triad", numba.get_num_threads(), elements)


def _numpy_copy(elements: int, repeats: int) -> Roof:
    import numpy as np

    source = np.ones(elements)
    target = np.zeros(elements)
    seconds = _best_seconds(lambda: np.copyto(target, source), repeats)
    return Roof(2 * 8 * elements / seconds, "numpy-copy", 1, elements)


def measure(elements: int = DEFAULT_ELEMENTS, repeats: int = DEFAULT_REPEATS) -> Roof:
    """Best-of-``repeats`` STREAM triad bandwidth (NumPy copy bandwidth without Numba)."""
    if elements < 1 or repeats < 1:
        raise ValueError(f"elements and repeats must be positive, got {elements} and {repeats}")
    try:
        import numba  # noqa: F401
    except ImportError:
        return _numpy_copy(elements, repeats)
    return _numba_triad(elements, repeats)


def measure_in_child(elements: int = DEFAULT_ELEMENTS, repeats: int = DEFAULT_REPEATS) -> Roof:
    """``measure`` in a child process, so the caller's memory stays small.

    Linux carries a process's peak RSS across ``exec`` into the programs it starts, so a
    benchmark harness that allocated the STREAM arrays would inflate every child's peak memory.
    """
    return Roof(**run_in_child("shoal.bench.stream", "STREAM measurement", elements, repeats))


def run_in_child(module: str, what: str, elements: int, repeats: int) -> dict[str, Any]:
    """Run ``python -m module --elements N --repeats R --json`` and return the JSON it prints;
    ``what`` names the measurement in the error if the child fails."""
    result = subprocess.run(
        [sys.executable, "-m", module, "--elements", str(elements), "--repeats", str(repeats), "--json"],
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode != 0:
        raise RuntimeError(f"{what} failed:\n{result.stderr[-4000:]}")
    return json.loads(result.stdout)


def command_line(measure: Callable[[int, int], Any], description: str, argv: list[str] | None) -> None:
    """The command line of a bandwidth measurement: ``--elements``, ``--repeats``, ``--json``."""
    parser = argparse.ArgumentParser(description=description.splitlines()[0])
    parser.add_argument("--elements", type=int, default=DEFAULT_ELEMENTS)
    parser.add_argument("--repeats", type=int, default=DEFAULT_REPEATS)
    parser.add_argument("--json", action="store_true", help="print the result as JSON")
    args = parser.parse_args(argv)
    result = measure(args.elements, args.repeats)
    print(json.dumps(asdict(result)) if args.json else result.describe())


def main(argv: list[str] | None = None) -> None:
    command_line(measure, __doc__ or "", argv)


if __name__ == "__main__":
    main()

"""How close Shoal's fused element-wise kernels come to the roof: the STREAM triad through Shoal.

``a[:] = b + 3.0 * c`` written with ``shoal.numpy`` becomes one fused kernel per view-block
(``3.0 * c`` and the sum are temporaries that are never allocated) run on the node engine's pool.
It is timed alternately with the compiled parallel triad that defines the roof, in one process,
best of ``repeats`` each as STREAM reports, so the ratio compares the two under the same load.

Run alone: ``python -m shoal.bench.fused [--elements N] [--repeats R]``.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from shoal.bench.stream import (
    DEFAULT_ELEMENTS,
    DEFAULT_REPEATS,
    TRIAD_BYTES_PER_ELEMENT,
    command_line,
    numba_triad,
    run_in_child,
)


@dataclass(frozen=True)
class FusedBandwidth:
    """Best triad bandwidth through Shoal and of the compiled roof loop, measured alternately."""

    shoal_bytes_per_second: float
    roof_bytes_per_second: float
    elements: int

    @property
    def fraction(self) -> float:
        return self.shoal_bytes_per_second / self.roof_bytes_per_second

    def describe(self) -> str:
        return (
            f"{self.shoal_bytes_per_second / 1e9:.1f} GB/s = {self.fraction:.0%} of the roof loop's "
            f"{self.roof_bytes_per_second / 1e9:.1f} GB/s in the same process "
            f"(`a[:] = b + 3.0 * c`, {self.elements:,} float64 elements)"
        )


def measure(elements: int = DEFAULT_ELEMENTS, repeats: int = DEFAULT_REPEATS) -> FusedBandwidth:
    """Alternate the Shoal triad and the roof triad ``repeats`` times; best of each."""
    if elements < 1 or repeats < 1:
        raise ValueError(f"elements and repeats must be positive, got {elements} and {repeats}")
    os.environ.setdefault("SHOAL_COMPILE", "sync")  # steady state: the kernel is compiled first
    import shoal
    import shoal.numpy as snp

    a, b, c = snp.zeros(elements), snp.ones(elements), snp.full(elements, 2.0)

    def shoal_triad() -> None:
        a[:] = b + 3.0 * c
        shoal.flush()

    roof_triad, roof_correct = numba_triad(elements)
    shoal_triad()
    roof_triad()
    best = {"shoal": float("inf"), "roof": float("inf")}
    for _ in range(repeats):
        for name, run in (("shoal", shoal_triad), ("roof", roof_triad)):
            start = time.perf_counter()
            run()
            best[name] = min(best[name], time.perf_counter() - start)
    if float(a[elements // 2]) != 7.0 or not roof_correct():
        raise RuntimeError("a triad produced a wrong result")
    moved = TRIAD_BYTES_PER_ELEMENT * elements
    return FusedBandwidth(moved / best["shoal"], moved / best["roof"], elements)


def measure_in_child(elements: int = DEFAULT_ELEMENTS, repeats: int = DEFAULT_REPEATS) -> FusedBandwidth:
    """``measure`` in a child process (see ``stream.measure_in_child`` for why)."""
    return FusedBandwidth(**run_in_child("shoal.bench.fused", "fused triad measurement", elements, repeats))


def main(argv: list[str] | None = None) -> None:
    command_line(measure, __doc__ or "", argv)


if __name__ == "__main__":
    main()

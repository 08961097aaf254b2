"""Samples gathered per (example, tool), and the figures derived from them."""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field

from shoal.bench.catalog import Example
from shoal.bench.measure import Sample

CHECKSUM_RELATIVE_TOLERANCE = 1e-9


@dataclass
class Cell:
    """Every sample of one tool on one example, or why there are none."""

    samples: list[Sample] = field(default_factory=list)
    unavailable: str | None = None  # "n/a: ..." reason when the tool cannot run this example
    failure: str | None = None  # the error of a failed run

    @property
    def ok(self) -> bool:
        return bool(self.samples) and self.failure is None and self.unavailable is None

    @property
    def median_seconds(self) -> float:
        return statistics.median(sample.seconds for sample in self.samples)

    @property
    def peak_rss_bytes(self) -> int:
        return max(sample.peak_rss_bytes for sample in self.samples)

    @property
    def checksum(self) -> float:
        return self.samples[0].checksum

    @property
    def scheduling_us_per_block_op(self) -> float | None:
        """Median over runs of (scheduling seconds / block operations), or None without stats."""
        per_run = [
            sample.stats.scheduling_seconds / sample.stats.block_ops * 1e6
            for sample in self.samples
            if sample.stats is not None and sample.stats.block_ops
        ]
        return statistics.median(per_run) if per_run else None

    @property
    def block_ops(self) -> int | None:
        counts = [sample.stats.block_ops for sample in self.samples if sample.stats is not None]
        return counts[0] if counts else None


def checksums_agree(a: float, b: float) -> bool:
    """Equal within ``CHECKSUM_RELATIVE_TOLERANCE`` (relative to the larger magnitude)."""
    if math.isnan(a) or math.isnan(b):
        return math.isnan(a) and math.isnan(b)
    return math.isclose(a, b, rel_tol=CHECKSUM_RELATIVE_TOLERANCE, abs_tol=0.0)


@dataclass
class ExampleResult:
    """All tools on one example at one size."""

    example: Example
    size: int
    cells: dict[str, Cell]

    @property
    def minimal_bytes(self) -> float:
        return self.example.minimal_bytes(self.size)

    def reference(self) -> Cell | None:
        numpy = self.cells.get("numpy")
        return numpy if numpy is not None and numpy.ok else None

    def speedup(self, tool: str) -> float | None:
        """NumPy's median time over ``tool``'s: above 1 means faster than NumPy."""
        reference, cell = self.reference(), self.cells.get(tool)
        if reference is None or cell is None or not cell.ok:
            return None
        return reference.median_seconds / cell.median_seconds

    def ratio(self, tool: str, other: str) -> float | None:
        """``other``'s median time over ``tool``'s (how many times faster ``tool`` is)."""
        a, b = self.cells.get(tool), self.cells.get(other)
        if a is None or b is None or not a.ok or not b.ok:
            return None
        return b.median_seconds / a.median_seconds

    def bandwidth_fraction(self, tool: str, roof_bytes_per_second: float) -> float | None:
        cell = self.cells.get(tool)
        if cell is None or not cell.ok:
            return None
        return self.minimal_bytes / cell.median_seconds / roof_bytes_per_second

    def checksum_mismatches(self) -> list[str]:
        """Descriptions of every tool whose checksums disagree with NumPy's (or among its runs)."""
        problems = []
        reference = self.reference()
        for tool, cell in self.cells.items():
            if not cell.ok:
                continue
            values = {sample.checksum for sample in cell.samples}
            if any(not checksums_agree(value, cell.checksum) for value in values):
                problems.append(f"{tool}: checksums differ between runs: {sorted(values)}")
            if reference is not None and not checksums_agree(cell.checksum, reference.checksum):
                problems.append(
                    f"{tool}: checksum {cell.checksum!r} differs from NumPy's "
                    f"{reference.checksum!r} (relative {_relative(cell.checksum, reference.checksum):.1e})"
                )
        return problems


def _relative(a: float, b: float) -> float:
    scale = max(abs(a), abs(b))
    return abs(a - b) / scale if scale else 0.0

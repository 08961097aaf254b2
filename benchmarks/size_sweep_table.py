"""Shoal against NumPy at one sweep point: the figures, the verdict, and the Markdown table.

A point is *slower* when Shoal's median time is above NumPy's and the two ranges of repetitions do
not overlap (Shoal's fastest run is slower than NumPy's slowest); a higher median inside the spread
is reported but not flagged. Peak memory is compared the same way: *more memory* when Shoal's
smallest peak exceeds NumPy's largest.
"""

from __future__ import annotations

import re
import statistics
from dataclasses import dataclass

from shoal.bench.results import Cell, ExampleResult

MIB = 2**20
SLOWER = "SLOWER"
MORE_MEMORY = "MORE MEMORY"
CHECKSUM = "CHECKSUM DIFFERS"
HEADER = (
    "| example | elements | arguments | NumPy s [min, max] | Shoal s [min, max] | Shoal/NumPy time "
    "| NumPy MiB | Shoal MiB | Shoal/NumPy memory | Shoal engine | flags |"
)
COLUMNS = HEADER.count("|") - 1


@dataclass(frozen=True)
class Spread:
    """Median and range of one tool's repetitions."""

    median: float
    low: float
    high: float

    @classmethod
    def of(cls, values: list[float]) -> Spread:
        return cls(statistics.median(values), min(values), max(values))

    def cell(self, digits: int) -> str:
        return f"{self.median:.{digits}f} [{self.low:.{digits}f}, {self.high:.{digits}f}]"


@dataclass(frozen=True)
class Comparison:
    """NumPy and Shoal at one (example, size): medians, ranges, ratios and flags."""

    numpy_seconds: Spread
    shoal_seconds: Spread
    numpy_mib: Spread
    shoal_mib: Spread
    batches: int | None
    block_ops: int | None
    checksum_problems: tuple[str, ...]

    @classmethod
    def of(cls, result: ExampleResult) -> Comparison:
        numpy, shoal = result.cells["numpy"], result.cells["shoal"]
        stats = [sample.stats for sample in shoal.samples if sample.stats is not None]
        return cls(
            numpy_seconds=_seconds(numpy),
            shoal_seconds=_seconds(shoal),
            numpy_mib=_mib(numpy),
            shoal_mib=_mib(shoal),
            batches=stats[0].batches if stats else None,
            block_ops=stats[0].block_ops if stats else None,
            checksum_problems=tuple(result.checksum_mismatches()),
        )

    @property
    def time_ratio(self) -> float:
        """Shoal's median time over NumPy's: above 1 means Shoal is slower."""
        return self.shoal_seconds.median / self.numpy_seconds.median

    @property
    def memory_ratio(self) -> float:
        return self.shoal_mib.median / self.numpy_mib.median

    @property
    def slower(self) -> bool:
        return self.time_ratio > 1.0 and self.shoal_seconds.low > self.numpy_seconds.high

    @property
    def more_memory(self) -> bool:
        return self.shoal_mib.low > self.numpy_mib.high

    def flags(self) -> list[str]:
        flags = []
        if self.slower:
            flags.append(SLOWER)
        elif self.time_ratio > 1.0:
            flags.append("slower within spread")
        if self.more_memory:
            flags.append(f"{MORE_MEMORY} (+{self.shoal_mib.median - self.numpy_mib.median:.0f} MiB)")
        if self.checksum_problems:
            flags.append(CHECKSUM)
        return flags

    @property
    def offender(self) -> bool:
        return self.slower or self.more_memory or bool(self.checksum_problems)


def _seconds(cell: Cell) -> Spread:
    return Spread.of([sample.seconds for sample in cell.samples])


def _mib(cell: Cell) -> Spread:
    return Spread.of([sample.peak_rss_bytes / MIB for sample in cell.samples])


def arguments_text(size: int, arguments: tuple[str, ...]) -> str:
    return "`" + " ".join([str(size), *arguments]) + "`"


def row(name: str, elements: int, arguments: str, comparison: Comparison) -> str:
    """One table row of a measured point."""
    engine = "no batches"
    if comparison.batches is not None:
        engine = f"{comparison.batches} batches, {comparison.block_ops} block ops"
    cells = [
        name,
        f"{elements:,}",
        arguments,
        comparison.numpy_seconds.cell(4),
        comparison.shoal_seconds.cell(4),
        f"{comparison.time_ratio:.2f}x",
        comparison.numpy_mib.cell(0),
        comparison.shoal_mib.cell(0),
        f"{comparison.memory_ratio:.2f}x",
        engine,
        ", ".join(comparison.flags()),
    ]
    return "| " + " | ".join(cells) + " |"


def note_row(name: str, elements: int, arguments: str, note: str) -> str:
    """One table row of a point that was not measured (skipped or failed)."""
    return "| " + " | ".join([name, f"{elements:,}", arguments, *["-"] * (COLUMNS - 4), note]) + " |"


@dataclass(frozen=True)
class ParsedRow:
    """A measured row read back from the table."""

    example: str
    elements: int
    numpy_seconds: float
    shoal_seconds: float
    time_ratio: float
    numpy_mib: float
    shoal_mib: float
    memory_ratio: float
    flags: str


_SPREAD = re.compile(r"^([0-9.]+) \[([0-9.]+), ([0-9.]+)\]$")


def _median(text: str) -> float:
    match = _SPREAD.match(text)
    if match is None:
        raise ValueError(f"expected 'MEDIAN [LOW, HIGH]', got {text!r}")
    return float(match.group(1))


def parse(text: str) -> list[ParsedRow]:
    """The measured rows of a table written by ``render`` (skipped and failed rows are left out).

    Raises ValueError on a row with the wrong number of cells or a figure that does not parse.
    """
    rows = []
    lines = text.splitlines()
    if HEADER not in lines:
        raise ValueError("no size-sweep table header found")
    for line in lines[lines.index(HEADER) + 2 :]:
        if not line.startswith("|"):
            break
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != COLUMNS:
            raise ValueError(f"expected {COLUMNS} cells, got {len(cells)}: {line!r}")
        if cells[3] == "-":
            continue
        rows.append(
            ParsedRow(
                example=cells[0],
                elements=int(cells[1].replace(",", "")),
                numpy_seconds=_median(cells[3]),
                shoal_seconds=_median(cells[4]),
                time_ratio=float(cells[5].rstrip("x")),
                numpy_mib=_median(cells[6]),
                shoal_mib=_median(cells[7]),
                memory_ratio=float(cells[8].rstrip("x")),
                flags=cells[10],
            )
        )
    return rows

"""The Markdown report: one table of medians and ratios, the roof, and any checksum problems."""

from __future__ import annotations

from dataclasses import dataclass

from shoal.bench.fused import FusedBandwidth
from shoal.bench.results import ExampleResult
from shoal.bench.stream import Roof

MIB = 1 << 20


@dataclass(frozen=True)
class RunInfo:
    """How the run was made, for the report's header."""

    command: str
    repeats: int
    cores: int
    python: str
    numpy: str
    tools: tuple[str, ...]


def _seconds(result: ExampleResult, tool: str) -> str:
    cell = result.cells.get(tool)
    if cell is None:
        return "not run"
    if cell.unavailable:
        return cell.unavailable
    if cell.failure:
        return "failed"
    speedup = result.speedup(tool)
    ratio = f" ({speedup:.2f}x)" if speedup is not None and tool != "numpy" else ""
    return f"{cell.median_seconds:.3f}{ratio}"


def _shoal_versus(result: ExampleResult, other: str) -> str:
    ratio = result.ratio("shoal", other)
    return "n/a" if ratio is None else f"{ratio:.2f}x"


def _bandwidth(result: ExampleResult, tool: str, roof: Roof) -> str:
    fraction = result.bandwidth_fraction(tool, roof.bytes_per_second)
    return "n/a" if fraction is None else f"{100 * fraction:.0f}%"


def _memory(result: ExampleResult, tool: str) -> str:
    cell = result.cells.get(tool)
    return f"{cell.peak_rss_bytes / MIB:.0f}" if cell is not None and cell.ok else "n/a"


def _scheduling(result: ExampleResult) -> str:
    cell = result.cells.get("shoal")
    if cell is None or not cell.ok:
        return "n/a"
    cost = cell.scheduling_us_per_block_op
    if cost is None:
        return "n/a (no engine stats)"
    return f"{cost:.1f} ({cell.block_ops:,} ops)"


def _size(result: ExampleResult) -> str:
    arguments = " ".join(result.example.arguments)
    return f"{result.size} {arguments}".strip()


def render(results: list[ExampleResult], roof: Roof, info: RunInfo, fused: FusedBandwidth | None = None) -> str:
    """The whole report as Markdown."""
    tools = info.tools
    lines = [
        "# Shoal benchmarks",
        "",
        f"`{info.command}`: {info.repeats} repetitions, tools alternating within each "
        f"repetition; medians of the timed section each program reports. {info.cores} cores, "
        f"Python {info.python}, NumPy {info.numpy}.",
        "",
        f"Memory-bandwidth roof: {roof.describe()}.",
        "",
        "Fused element-wise kernel: "
        + (f"the same triad through Shoal, {fused.describe()}." if fused else "not measured (needs Numba)."),
        "",
        "## Median seconds (speed-up over NumPy)",
        "",
        "| example | size and arguments | " + " | ".join(tools) + " | Shoal vs numexpr | Shoal vs Dask |",
        "|---|---|" + "---:|" * len(tools) + "---:|---:|",
    ]
    for result in results:
        row = [result.example.name, f"`{_size(result)}`"]
        row += [_seconds(result, tool) for tool in tools]
        row += [_shoal_versus(result, "numexpr"), _shoal_versus(result, "dask")]
        lines.append("| " + " | ".join(row) + " |")
    lines += [
        "",
        "## Effective bandwidth (% of the roof) and peak memory (MiB RSS)",
        "",
        "Effective bandwidth = bytes a minimal fused implementation must move (formula per example "
        "in `shoal/bench/catalog.py`) / median time. Compute-bound examples are labelled; their "
        "percentage only shows how far from memory-bound they are.",
        "",
        "| example | bound | minimal MB | "
        + " | ".join(f"{tool} BW" for tool in tools)
        + " | "
        + " | ".join(f"{tool} MiB" for tool in tools)
        + " | Shoal scheduling µs/block op |",
        "|---|---|---:|" + "---:|" * (2 * len(tools)) + "---:|",
    ]
    for result in results:
        row = [result.example.name, result.example.bound, f"{result.minimal_bytes / 1e6:,.0f}"]
        row += [_bandwidth(result, tool, roof) for tool in tools]
        row += [_memory(result, tool) for tool in tools]
        row.append(_scheduling(result))
        lines.append("| " + " | ".join(row) + " |")
    problems = [
        f"- **{result.example.name}**: {problem}"
        for result in results
        for problem in result.checksum_mismatches()
    ]
    failures = [
        f"- **{result.example.name}** under {tool}: {cell.failure}"
        for result in results
        for tool, cell in result.cells.items()
        if cell.failure
    ]
    lines += ["", "## Checksums", ""]
    if problems:
        lines += ["**CHECKSUMS DISAGREE** (relative tolerance 1e-9):", "", *problems]
    else:
        lines.append("All tools' checksums agree with NumPy's (relative tolerance 1e-9).")
    if failures:
        lines += ["", "## Failed runs", "", *failures]
    return "\n".join(lines) + "\n"

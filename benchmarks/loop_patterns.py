"""The loop-pattern suite (benchmarks/loops) and the examples under NumPy and Shoal at three sizes.

Sizes: ``small`` keeps every array in the 2 MiB L2 cache of this machine, ``medium`` is about
10^6 elements, ``large`` is far beyond the 32 MiB L3 (1.6-3.2 * 10^7 elements). Step and repeat
counts make one NumPy run last about 0.05-2 s. Every run is a child process
(``shoal.bench.measure``): NumPy and Shoal alternate within each repetition (the one going first
rotates), and the report gives medians. A row is flagged ``slower`` when Shoal's fastest run is
slower than 1.10 x NumPy's median. A Shoal run that fails or runs past ``--timeout`` is reported
and not repeated.

Run: ``python -m benchmarks.loop_patterns [--kernels a,b] [--repeats 3] [--sizes small,medium,large]
[--eager-threshold N] [--examples] [--ranks N]`` (``--ranks``: Shoal under ``mpiexec -n N``, the
cluster, against NumPy in one process). Writes ``benchmarks/results/loop_patterns.md`` and
``.png`` (``loop_patterns_eager<N>`` with ``--eager-threshold``); ``--replot FILE.md`` only draws the
plot of a table written before.
"""

from __future__ import annotations

import argparse
import os
import platform
import shlex
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from benchmarks.baseline import with_settings
from benchmarks.cluster_layout import mpiexec
from benchmarks.size_sweep import size_for, steps_for, with_steps
from shoal.bench.catalog import EXAMPLES
from shoal.bench.measure import BenchError, command, run
from shoal.bench.stats import Totals

ROOT = Path(__file__).resolve().parent.parent
LOOPS = ROOT / "benchmarks" / "loops"
RESULTS = ROOT / "benchmarks" / "results"
SIZES = ("small", "medium", "large")
SLOWER = 1.10
RELATIVE_TOLERANCE = 1e-9
EXAMPLE_ELEMENTS = {"small": 2**15, "medium": 10**6, "large": 16 * 10**6}

# kernel -> size label -> (SIZE, fixed arguments). Chosen from NumPy timings on this machine.
KERNELS: dict[str, dict[str, tuple[int, tuple[str, ...]]]] = {
    "adi": {"small": (150, ("--steps", "10")), "medium": (1000, ("--steps", "2")), "large": (4000, ("--steps", "1"))},
    "bicg": {"small": (250, ("--steps", "5000")), "medium": (1000, ("--steps", "100")), "large": (4000, ("--steps", "5"))},
    "cholesky": {"small": (200, ("--repeat", "20")), "medium": (1000, ()), "large": (4000, ("--steps", "400"))},
    "cnn_forward": {"small": (32, ("--batch", "16")), "medium": (128, ("--batch", "4")), "large": (256, ("--batch", "4"))},
    "conv2d": {"small": (200, ("--steps", "30")), "medium": (1000, ("--steps", "3")), "large": (4000, ("--steps", "1"))},
    "correlation": {"small": (200, ("--repeat", "40")), "medium": (1000, ("--steps", "400")), "large": (4000, ("--steps", "100"))},
    "covariance": {"small": (200, ("--repeat", "40")), "medium": (1000, ()), "large": (4000, ("--steps", "100"))},
    "csr_spmv": {"small": (10000, ("--steps", "200")), "medium": (60000, ("--steps", "20")), "large": (1000000, ("--steps", "5"))},
    "diagonal_trace": {"small": (200, ("--steps", "400")), "medium": (1000, ("--steps", "150")), "large": (4000, ("--steps", "3"))},
    "edit_distance": {"small": (200, ("--repeat", "50")), "medium": (1000, ("--repeat", "6")), "large": (4000, ())},
    "fdtd_2d": {"small": (150, ("--steps", "400")), "medium": (1000, ("--steps", "10")), "large": (4000, ("--steps", "2"))},
    "floyd_warshall": {"small": (200, ("--repeat", "5")), "medium": (1000, ("--steps", "200")), "large": (4000, ("--steps", "10"))},
    "fractal_masks": {"small": (200, ("--steps", "300")), "medium": (1000, ("--steps", "20")), "large": (4000, ("--steps", "2"))},
    "game_of_life": {"small": (200, ("--steps", "100")), "medium": (1024, ("--steps", "10")), "large": (4096, ("--steps", "2"))},
    "gauss_seidel": {"small": (200, ("--steps", "80")), "medium": (1000, ("--steps", "16")), "large": (4000, ("--steps", "3"))},
    "gramschmidt": {"small": (200, ("--repeat", "10")), "medium": (1000, ("--steps", "100")), "large": (4000, ("--steps", "8"))},
    "heat_3d": {"small": (40, ("--steps", "50")), "medium": (100, ("--steps", "10")), "large": (300, ("--steps", "1"))},
    "iir_filter": {"small": (200, ("--repeat", "30")), "medium": (1000, ("--repeat", "3")), "large": (4000, ())},
    "jacobi_1d": {"small": (100000, ("--steps", "300")), "medium": (1000000, ("--steps", "40")), "large": (32000000, ("--steps", "1"))},
    "lu": {"small": (200, ("--repeat", "20")), "medium": (1000, ("--steps", "300")), "large": (4000, ("--steps", "20"))},
    "mlp": {"small": (500, ("--steps", "10")), "medium": (4000, ("--steps", "5")), "large": (60000, ("--steps", "1"))},
    "rank_one_updates": {"small": (200, ("--steps", "400")), "medium": (1000, ("--steps", "100")), "large": (4000, ("--steps", "8"))},
    "softmax_rows": {"small": (200, ("--repeat", "20")), "medium": (1000, ("--repeat", "4")), "large": (4000, ())},
    "syrk": {"small": (200, ("--repeat", "30")), "medium": (1000, ()), "large": (4000, ("--steps", "1000"))},
    "trisolv": {"small": (200, ("--repeat", "100")), "medium": (1000, ("--repeat", "50")), "large": (4000, ("--repeat", "10"))},
    "trmm": {"small": (200, ("--repeat", "30")), "medium": (1000, ("--steps", "500")), "large": (4000, ("--steps", "100"))},
}


@dataclass(frozen=True)
class Point:
    """One program at one size."""

    name: str
    label: str  # small, medium or large
    program: Path
    size: int
    arguments: tuple[str, ...]


@dataclass
class Row:
    """The runs of one point under both tools."""

    point: Point
    seconds: dict[str, list[float]] = field(default_factory=lambda: {"numpy": [], "shoal": [], "baseline": []})
    checksums: dict[str, float] = field(default_factory=dict)
    failure: str | None = None  # why Shoal stopped being run (error, timeout)
    baseline_failure: str | None = None  # the same for the baseline (``--baseline``)
    stats: Totals | None = None  # node engine totals of the last Shoal run (whole program)

    def median(self, tool: str) -> float | None:
        values = self.seconds[tool]
        return statistics.median(values) if values else None

    @property
    def checksum_differs(self) -> bool:
        numpy, shoal = self.checksums.get("numpy"), self.checksums.get("shoal")
        if numpy is None or shoal is None:
            return False
        return abs(shoal - numpy) > RELATIVE_TOLERANCE * max(abs(numpy), 1e-300)

    @property
    def flag(self) -> str:
        flags = []
        numpy = self.median("numpy")
        if self.failure:
            flags.append(self.failure)
        elif numpy is not None and self.seconds["shoal"] and min(self.seconds["shoal"]) > SLOWER * numpy:
            flags.append("slower")
        if self.checksum_differs:
            flags.append("checksum differs")
        return ", ".join(flags)


def points(kernels: tuple[str, ...], sizes: tuple[str, ...], examples: bool) -> list[Point]:
    """Every (program, size) pair to run, kernels first, then the catalog examples."""
    chosen = [
        Point(name, label, LOOPS / f"{name}.py", *KERNELS[name][label])
        for name in kernels
        for label in sizes
    ]
    if examples:
        for example in EXAMPLES:
            for label in sizes:
                size = size_for(example, EXAMPLE_ELEMENTS[label])
                stepped = with_steps(example, steps_for(example, example.elements(size)))
                chosen.append(
                    Point(example.name, label, ROOT / "examples" / f"{example.name}.py", size, stepped.arguments)
                )
    return chosen


def measure(rows: list[Row], repeats: int, environment: dict[str, str], timeout: float, baseline: dict[str, str] | None = None, ranks: int = 0) -> None:
    """Run every row ``repeats`` times under both tools (and Shoal under the ``baseline``
    environment, if given), rotating which goes first; Shoal under ``mpiexec -n ranks`` if
    ``ranks`` is not 0."""
    tools = ("numpy", "shoal") if baseline is None else ("numpy", "shoal", "baseline")
    for repeat in range(repeats):
        for index, row in enumerate(rows):
            turn = (repeat + index) % len(tools)
            for tool in tools[turn:] + tools[:turn]:
                failure = row.baseline_failure if tool == "baseline" else row.failure
                if tool != "numpy" and failure:
                    continue
                point = row.point
                argv = command("numpy" if tool == "numpy" else "shoal", point.program, point.size, point.arguments)
                if ranks and tool != "numpy":
                    argv = [mpiexec(), "-n", str(ranks), *argv]
                try:
                    sample = run(argv, ROOT, timeout, None if tool == "numpy" else baseline if tool == "baseline" else environment)
                except BenchError as error:
                    if tool == "numpy":
                        raise
                    text = str(error)
                    failure = f"timeout > {timeout:.0f} s" if "timed out" in text else "error: " + _last_line(text)
                    if tool == "baseline":
                        row.baseline_failure = failure
                    else:
                        row.failure = failure
                    print(f"  {point.name} {point.label}: {tool} {failure}", flush=True)
                    continue
                row.seconds[tool].append(sample.seconds)
                if tool != "baseline":
                    row.checksums[tool] = sample.checksum
                if tool == "shoal":
                    row.stats = sample.stats
            numpy, shoal, before = row.median("numpy"), row.median("shoal"), row.median("baseline")
            shown = f"{shoal:.4f}" if shoal is not None else "-"
            extra = "" if baseline is None else f", baseline {before:.4f} s" if before is not None else ", baseline -"
            print(f"[{repeat + 1}/{repeats}] {point.name} {point.label}: numpy {numpy:.4f} s, shoal {shown} s{extra}", flush=True)


def _last_line(text: str) -> str:
    lines = [line.strip() for line in text.strip().splitlines() if line.strip()]
    return (lines[-1] if lines else text)[:160].replace("|", "/")


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"


def table(rows: list[Row], baseline: bool = False) -> list[str]:
    """The Markdown table of ``rows`` (with the baseline's median and ratio, if measured)."""
    lines = [
        "| kernel | size | arguments | NumPy s | Shoal s | Shoal min s | ratio | batches | sched. s | flag |"
        + (" baseline s | baseline ratio |" if baseline else ""),
        "|---|---|---|---:|---:|---:|---:|---:|---:|---|" + ("---:|---:|" if baseline else ""),
    ]
    for row in rows:
        numpy, shoal = row.median("numpy"), row.median("shoal")
        fastest = min(row.seconds["shoal"]) if row.seconds["shoal"] else None
        ratio = f"{shoal / numpy:.2f}x" if numpy and shoal is not None else "-"
        point = row.point
        batches = str(row.stats.batches) if row.stats else "-"
        scheduling = f"{row.stats.scheduling_seconds:.3f}" if row.stats else "-"
        line = (
            f"| {point.name} | {point.label} | {point.size} {' '.join(point.arguments)} | {_seconds(numpy)} "
            f"| {_seconds(shoal)} | {_seconds(fastest)} | {ratio} | {batches} | {scheduling} | {row.flag} |"
        )
        if baseline:
            before = row.median("baseline")
            shown = _seconds(before) if before is not None else (row.baseline_failure or "-")
            line += f" {shown} | {f'{before / numpy:.2f}x' if numpy and before is not None else '-'} |"
        lines.append(line)
    return lines


def summary(rows: list[Row], sizes: tuple[str, ...]) -> list[str]:
    """Median speed-up and the slower rows, per size."""
    lines = ["| size | rows | median speed-up (NumPy / Shoal) | rows slower than 1.10x | failed |", "|---|---:|---:|---:|---:|"]
    for label in sizes:
        chosen = [row for row in rows if row.point.label == label]
        speedups = [row.median("numpy") / row.median("shoal") for row in chosen if row.median("shoal")]
        median = f"{statistics.median(speedups):.2f}x" if speedups else "-"
        slower = sum("slower" in row.flag for row in chosen)
        failed = sum(row.failure is not None for row in chosen)
        lines.append(f"| {label} | {len(chosen)} | {median} | {slower} | {failed} |")
    return lines


def plot(rows: list[Row], sizes: tuple[str, ...], path: Path, title: str) -> None:
    """Speed-up over NumPy per kernel and size, log axis, with the 1x line."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(dict.fromkeys(row.point.name for row in rows))
    width = 0.8 / len(sizes)
    figure, axes = plt.subplots(figsize=(max(8.0, 0.55 * len(names)), 5.0))
    try:
        for offset, label in enumerate(sizes):
            positions, heights = [], []
            for position, name in enumerate(names):
                for row in rows:
                    if row.point.name == name and row.point.label == label and row.median("shoal"):
                        positions.append(position + (offset - (len(sizes) - 1) / 2) * width)
                        heights.append(row.median("numpy") / row.median("shoal"))
            axes.bar(positions, heights, width=width, label=label)
        axes.axhline(1.0, color="black", linewidth=0.8)
        axes.set_yscale("log")
        axes.set_xticks(range(len(names)))
        axes.set_xticklabels(names, rotation=60, ha="right", fontsize=8)
        axes.set_ylabel("speed-up over NumPy (median)")
        axes.set_title(title)
        axes.legend()
        figure.tight_layout()
        figure.savefig(path, dpi=110)
    finally:
        plt.close(figure)


def read_table(path: Path) -> list[Row]:
    """The rows of a table this module wrote (medians only), to draw its plot again."""
    rows = []
    for line in path.read_text().splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) not in (10, 12) or (cells[0] not in KERNELS and cells[0] not in {e.name for e in EXAMPLES}):
            continue
        name, label, arguments, numpy, shoal = cells[:5]
        size, *rest = arguments.split()
        row = Row(Point(name, label, Path(), int(size), tuple(rest)))
        row.seconds["numpy"].append(float(numpy))
        if shoal != "-":
            row.seconds["shoal"].append(float(shoal))
        rows.append(row)
    return rows


def _names(text: str, known: tuple[str, ...], what: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(f"unknown {what} {', '.join(unknown) or '(none)'}; choose from {', '.join(known)}")
    return names


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--kernels", type=lambda text: _names(text, tuple(KERNELS), "kernel"), default=tuple(KERNELS))
    parser.add_argument("--sizes", type=lambda text: _names(text, SIZES, "size"), default=SIZES)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--eager-threshold", type=int, default=None, help="SHOAL_EAGER_THRESHOLD for the Shoal runs")
    parser.add_argument("--examples", action="store_true", help="also run the catalog examples")
    parser.add_argument("--ranks", type=int, default=0, help="run Shoal under mpiexec -n RANKS (the cluster)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds before a run is abandoned")
    parser.add_argument("--output", type=Path, default=None, help="Markdown file (default under benchmarks/results)")
    parser.add_argument("--replot", type=Path, default=None, help="draw the plot of a written table again")
    parser.add_argument(
        "--baseline", default=None, metavar="NAME=VALUE[,NAME=VALUE]",
        help="also run Shoal with these settings added (e.g. SHOAL_SETTLED_THRESHOLD=0), alternating",
    )
    args = parser.parse_args(argv)
    if args.replot is not None:
        rows = read_table(args.replot)
        sizes = tuple(label for label in SIZES if any(row.point.label == label for row in rows))
        title = args.replot.read_text().splitlines()[0].removeprefix("# Loop patterns under NumPy and Shoal ")
        plot(rows, sizes, args.replot.with_suffix(".png"), f"Shoal speed-up over NumPy {title}")
        return

    environment = dict(os.environ)
    stem = "loop_patterns"
    if args.eager_threshold is not None:
        environment["SHOAL_EAGER_THRESHOLD"] = str(args.eager_threshold)
        stem += f"_eager{args.eager_threshold}"
    if args.ranks:
        stem += f"_ranks{args.ranks}"
    output = args.output or RESULTS / f"{stem}.md"
    rows = [Row(point) for point in points(args.kernels, args.sizes, args.examples)]
    started = time.perf_counter()
    baseline = with_settings(environment, args.baseline) if args.baseline else None
    measure(rows, args.repeats, environment, args.timeout, baseline, args.ranks)
    elapsed = time.perf_counter() - started

    setting = f"SHOAL_EAGER_THRESHOLD={args.eager_threshold}" if args.eager_threshold is not None else "default settings"
    if args.ranks:
        setting += f", Shoal at {args.ranks} ranks"
    invocation = shlex.join(["python", "-m", "benchmarks.loop_patterns", *(sys.argv[1:] if argv is None else argv)])
    lines = [
        f"# Loop patterns under NumPy and Shoal ({setting})",
        "",
        f"`{invocation}`: {args.repeats} alternating repetitions, medians, {elapsed / 60:.1f} min in all, "
        f"on {platform.machine()} with {os.cpu_count()} cores, Python {platform.python_version()}.",
        f"`slower`: Shoal's fastest run is slower than {SLOWER:.2f}x NumPy's median. "
        "Ratio: Shoal median / NumPy median (below 1 is faster). Batches and sched. s (planning and "
        "ready-queue bookkeeping): the node engine's totals over the whole last Shoal run "
        "(`SHOAL_STATS`), set-up included."
        + (f" Baseline: Shoal with `{args.baseline}`, in the same alternation." if args.baseline else ""),
        "",
        *summary(rows, args.sizes),
        "",
        *table(rows, baseline is not None),
        "",
    ]
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text("\n".join(lines))
    plot(rows, args.sizes, output.with_suffix(".png"), f"Shoal speed-up over NumPy ({setting})")
    print("\n".join(lines))


if __name__ == "__main__":
    main()

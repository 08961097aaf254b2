"""``python -m shoal.bench`` (also ``shoal bench``): every example under every tool, side by side.

Each repetition runs every (example, tool) pair once as its own child process, the tools in a
rotating order; the report gives medians, ratios, effective bandwidth against the measured STREAM
roof, peak memory and the node engine's scheduling cost per block operation.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import importlib.util
import os
import platform
import shlex
import sys
import time
from collections.abc import Callable
from pathlib import Path

from shoal.bench import chart, fused, report, stream
from shoal.bench.catalog import EXAMPLES, Example, find
from shoal.bench.measure import TOOLS, BenchError, command, run
from shoal.bench.results import Cell, ExampleResult

QUICK_ROOF_ELEMENTS = 1 << 23


def repository_root() -> Path:
    """The checkout holding examples/ and benchmarks/variants/ (next to the shoal package)."""
    root = Path(__file__).resolve().parents[2]
    if not (root / "examples").is_dir() or not (root / "benchmarks" / "variants").is_dir():
        raise SystemExit(
            f"shoal bench needs the source checkout (examples/ and benchmarks/variants/); "
            f"not found under {root}"
        )
    return root


def _names(text: str, known: tuple[str, ...], what: str) -> tuple[str, ...]:
    names = tuple(name.strip() for name in text.split(",") if name.strip())
    unknown = [name for name in names if name not in known]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown {what} {', '.join(unknown) or '(none given)'}; choose from {', '.join(known)}"
        )
    return names


def _size_override(text: str) -> tuple[str, int]:
    name, _, value = text.partition("=")
    try:
        find(name)
        size = int(value)
    except ValueError as error:
        raise argparse.ArgumentTypeError(f"--size expects EXAMPLE=INTEGER, got {text!r}: {error}") from None
    if size < 1:
        raise argparse.ArgumentTypeError(f"--size {name} must be positive, got {size}")
    return name, size


def parser() -> argparse.ArgumentParser:
    example_names = tuple(example.name for example in EXAMPLES)
    options = argparse.ArgumentParser(prog="python -m shoal.bench", description=__doc__.splitlines()[0])
    options.add_argument(
        "--examples",
        type=lambda text: _names(text, example_names, "example"),
        default=example_names,
        help="comma-separated examples (default: all)",
    )
    options.add_argument(
        "--tools",
        type=lambda text: _names(text, TOOLS, "tool"),
        default=TOOLS,
        help="comma-separated tools (default: numpy,numexpr,dask,shoal)",
    )
    options.add_argument("--repeats", type=int, default=5, help="repetitions (default 5)")
    options.add_argument(
        "--size",
        type=_size_override,
        action="append",
        default=[],
        metavar="EXAMPLE=SIZE",
        help="SIZE argument for one example (repeatable)",
    )
    options.add_argument(
        "--scale", type=float, default=1.0, help="multiply every default SIZE argument by this"
    )
    options.add_argument("--quick", action="store_true", help="small sizes: a smoke test")
    options.add_argument(
        "--output",
        type=Path,
        default=None,
        help="directory for bench.md and bench.png (default benchmarks/results)",
    )
    options.add_argument("--timeout", type=float, default=600.0, help="seconds per program run")
    return options


def _size(example: Example, overrides: dict[str, int], quick: bool, scale: float) -> int:
    if example.name in overrides:
        return overrides[example.name]
    base = example.quick_size if quick else example.default_size
    return max(1, round(base * scale))


def _unavailable(tool: str, example: Example, root: Path) -> str | None:
    """Why ``tool`` cannot run ``example`` ("n/a: ..."), or None if it can."""
    if tool in ("numexpr", "dask"):
        variant = example.variant(tool)
        if variant is None:
            return "n/a (not expressible)"
        if not (root / "benchmarks" / "variants" / variant).is_file():
            return "n/a (no variant)"
        if importlib.util.find_spec(tool) is None:
            return f"n/a ({tool} not installed)"
    if tool == "shoal" and importlib.util.find_spec("shoal.__main__") is None:
        return "n/a (runner missing)"
    return None


def _program(tool: str, example: Example, root: Path) -> Path:
    if tool in ("numexpr", "dask"):
        variant = example.variant(tool)
        assert variant is not None
        return root / "benchmarks" / "variants" / variant
    return root / "examples" / f"{example.name}.py"


def collect(
    examples: list[tuple[Example, int]],
    tools: tuple[str, ...],
    repeats: int,
    root: Path,
    timeout: float,
    after_repetition: Callable[[list[ExampleResult], int], None] = lambda results, done: None,
) -> list[ExampleResult]:
    """Run everything ``repeats`` times, tools alternating, and gather the samples.

    ``after_repetition(results, done)`` is called after each repetition, so a long run leaves a
    report of the repetitions it finished.
    """
    results = [
        ExampleResult(example, size, {tool: Cell(unavailable=_unavailable(tool, example, root)) for tool in tools})
        for example, size in examples
    ]
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH")]))}
    for repetition in range(repeats):
        order = tools[repetition % len(tools) :] + tools[: repetition % len(tools)]
        for result in results:
            for tool in order:
                cell = result.cells[tool]
                if cell.unavailable or cell.failure:
                    continue
                argv = command(tool, _program(tool, result.example, root), result.size, result.example.arguments)
                try:
                    sample = run(argv, root, timeout, environment)
                except BenchError as error:
                    cell.failure = str(error)
                    print(f"FAILED {result.example.name} under {tool}: {error}", file=sys.stderr)
                    continue
                cell.samples.append(sample)
                print(
                    f"[{repetition + 1}/{repeats}] {result.example.name:<18} {tool:<8} "
                    f"{sample.seconds:8.3f} s  {sample.peak_rss_bytes / 2**20:7.0f} MiB  "
                    f"checksum {sample.checksum!r}",
                    file=sys.stderr,
                    flush=True,
                )
        after_repetition(results, repetition + 1)
    return results


def main(argv: list[str] | None = None) -> int:
    """Run the benchmarks; returns 1 (after writing the report) if any checksum disagrees or a run failed."""
    args = parser().parse_args(argv)
    if args.repeats < 1:
        raise SystemExit(f"--repeats must be at least 1, got {args.repeats}")
    if args.scale <= 0:
        raise SystemExit(f"--scale must be positive, got {args.scale}")
    root = repository_root()
    output = args.output or root / "benchmarks" / "results"
    output.mkdir(parents=True, exist_ok=True)
    overrides = dict(args.size)
    chosen = [find(name) for name in args.examples]
    examples = [(example, _size(example, overrides, args.quick, args.scale)) for example in chosen]

    started = time.perf_counter()
    roof_elements = QUICK_ROOF_ELEMENTS if args.quick else stream.DEFAULT_ELEMENTS
    roof = stream.measure_in_child(roof_elements)
    print(f"roof: {roof.describe()}", file=sys.stderr)
    fused_triad = fused.measure_in_child(roof_elements) if roof.method == "numba-triad" else None
    if fused_triad is not None:
        print(f"fused triad through Shoal: {fused_triad.describe()}", file=sys.stderr)
    command_line = shlex.join(["python", "-m", "shoal.bench", *(sys.argv[1:] if argv is None else argv)])

    def write_report(results: list[ExampleResult], done: int) -> str:
        info = report.RunInfo(
            command=command_line,
            repeats=done,
            cores=os.cpu_count() or 1,
            python=platform.python_version(),
            numpy=importlib.metadata.version("numpy"),
            tools=args.tools,
        )
        text = report.render(results, roof, info, fused_triad)
        (output / "bench.md").write_text(text)
        return text

    results = collect(examples, args.tools, args.repeats, root, args.timeout, write_report)
    text = write_report(results, args.repeats)
    chart.draw(results, args.tools, output / "bench.png")
    print(text)
    print(f"wrote {output / 'bench.md'} and {output / 'bench.png'} in {time.perf_counter() - started:.0f} s", file=sys.stderr)

    mismatches = [problem for result in results for problem in result.checksum_mismatches()]
    failed = [cell for result in results for cell in result.cells.values() if cell.failure]
    if mismatches:
        print("CHECKSUMS DISAGREE:\n" + "\n".join(mismatches), file=sys.stderr)
    return 1 if mismatches or failed else 0

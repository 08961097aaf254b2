"""Every example under NumPy and under Shoal at sizes from 10^3 to 10^8 elements: time and memory.

For each example of ``shoal.bench.catalog`` the sweep picks, for every exponent k, the SIZE whose
largest array has closest to 10^k elements (the catalog's ``elements``), and a step count that
shrinks as arrays grow (about 3 * 10^7 element-steps, 1 to 1000 steps) so one run stays short.
Each point runs as ``shoal.bench`` runs a program: a child process per run, NumPy and Shoal
alternating within each repetition, the ``time:`` it prints and its peak RSS. Points flagged
slower are run again (``--confirm``) before the verdict. A point is skipped when NumPy's peak
memory, extrapolated linearly from the example's previous point, would exceed ``--memory-limit``.

Run: ``python -m benchmarks.size_sweep [--examples a,b] [--top-exponent 8] [--repeats 3]``
(``--quick``: up to 10^5). Writes ``benchmarks/results/size_sweep.md``.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import platform
import shlex
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from benchmarks.size_sweep_table import (
    HEADER,
    MIB,
    Comparison,
    arguments_text,
    note_row,
    row,
)
from shoal.bench.catalog import EXAMPLES, Example, find
from shoal.bench.cli import collect, repository_root
from shoal.bench.results import ExampleResult

TOOLS = ("numpy", "shoal")
BOTTOM_EXPONENT = 3
TOP_EXPONENT = 8
QUICK_TOP_EXPONENT = 5
STEP_WORK = 3 * 10**7  # element-steps per run, before the bounds below
MIN_STEPS, MAX_STEPS = 1, 1000
MEMORY_LIMIT_GIB = 6.0
GIB = 2**30

# The option of each example that sets its number of steps (None: the example has no loop).
STEP_OPTIONS: dict[str, str | None] = {
    "jacobi_stencil": "--iterations",
    "heat_equation": "--max-iterations",
    "black_scholes": "--days",
    "shallow_water": "--steps",
    "lattice_boltzmann": "--steps",
    "mandelbrot": "--iterations",
    "nbody": "--steps",
    "knn": None,
}
# Smallest SIZE each example accepts (knn needs at least k = 7 training points).
MINIMUM_SIZES: dict[str, int] = {"knn": 7, "jacobi_stencil": 3, "nbody": 2}
# Most steps an example's answer stays meaningful for: Black-Scholes options expire after half a
# year at the earliest, and a later day prices them at NaN.
MAXIMUM_STEPS: dict[str, int] = {"black_scholes": 180}


@dataclass(frozen=True)
class Point:
    """One example at one size: the catalog entry with this point's step count as its arguments."""

    example: Example
    size: int
    exponent: int  # the 10^exponent elements this point stands for

    @property
    def elements(self) -> int:
        return self.example.elements(self.size)


def size_for(example: Example, target: int) -> int:
    """The SIZE whose ``elements`` is closest to ``target`` (on a log scale), not below the minimum."""
    smallest = MINIMUM_SIZES.get(example.name, 1)
    if example.elements(smallest) >= target:
        return smallest
    high = smallest
    while example.elements(high) < target:
        high *= 2
    low = high // 2  # elements(low) < target <= elements(high)
    while high - low > 1:
        middle = (low + high) // 2
        if example.elements(middle) < target:
            low = middle
        else:
            high = middle
    return low if target / example.elements(low) < example.elements(high) / target else high


def steps_for(example: Example, elements: int) -> int:
    """Steps for a run of ``example`` over ``elements``-element arrays: fewer as arrays grow."""
    most = MAXIMUM_STEPS.get(example.name, MAX_STEPS)
    return max(MIN_STEPS, min(most, round(STEP_WORK / elements)))


def with_steps(example: Example, steps: int) -> Example:
    """``example`` with its step option set to ``steps`` (unchanged if it has none)."""
    option = STEP_OPTIONS[example.name]
    if option is None:
        return example
    arguments = list(example.arguments)
    if option not in arguments:
        raise ValueError(f"{example.name}: the catalog arguments {arguments} lack {option}")
    arguments[arguments.index(option) + 1] = str(steps)
    return dataclasses.replace(example, arguments=tuple(arguments))


def plan(example: Example, exponents: range) -> list[Point]:
    """The sweep points of ``example``, one per distinct SIZE, smallest first."""
    points: list[Point] = []
    for exponent in exponents:
        size = size_for(example, 10**exponent)
        if points and points[-1].size == size:
            continue
        points.append(Point(with_steps(example, steps_for(example, example.elements(size))), size, exponent))
    return points


@dataclass
class Outcome:
    """What happened at one point: a measured result, or why there is none."""

    point: Point
    result: ExampleResult | None = None
    note: str | None = None  # "skipped: ..." or "failed: ..."

    @property
    def comparison(self) -> Comparison | None:
        if self.result is None or not all(self.result.cells[tool].ok for tool in TOOLS):
            return None
        return Comparison.of(self.result)


def predicted_numpy_bytes(point: Point, measured: list[Outcome]) -> float | None:
    """NumPy's peak at ``point`` scaled from the largest measured point of the same example."""
    for outcome in reversed(measured):
        if outcome.comparison is not None:
            scale = point.elements / outcome.point.elements
            return outcome.comparison.numpy_mib.high * MIB * scale
    return None


def measure(
    point: Point, repeats: int, root: Path, timeout: float, into: ExampleResult | None = None
) -> ExampleResult:
    """Run ``point`` ``repeats`` times (tools alternating); samples join ``into`` when given."""
    result = collect([(point.example, point.size)], TOOLS, repeats, root, timeout)[0]
    if into is None:
        return result
    for tool in TOOLS:
        into.cells[tool].samples.extend(result.cells[tool].samples)
        into.cells[tool].failure = into.cells[tool].failure or result.cells[tool].failure
    return into


def sweep_example(
    points: list[Point], repeats: int, confirm: int, root: Path, timeout: float, limit_bytes: float
) -> list[Outcome]:
    """Measure ``points`` of one example in order, skipping those NumPy could not hold."""
    outcomes: list[Outcome] = []
    for point in points:
        predicted = predicted_numpy_bytes(point, outcomes)
        if predicted is not None and predicted > limit_bytes:
            note = f"skipped: NumPy would need about {predicted / GIB:.1f} GiB"
            outcomes.append(Outcome(point, note=note))
            print(f"{point.example.name} at {point.size}: {note}", file=sys.stderr)
            continue
        outcome = Outcome(point, measure(point, repeats, root, timeout))
        if confirm and outcome.comparison is not None and outcome.comparison.slower:
            print(f"{point.example.name} at {point.size}: slower; {confirm} more repetitions", file=sys.stderr)
            measure(point, confirm, root, timeout, into=outcome.result)
        if outcome.comparison is None:
            failures = [cell.failure for cell in outcome.result.cells.values() if cell.failure]
            outcome.note = "failed: " + (failures[0].splitlines()[0] if failures else "no samples")
        outcomes.append(outcome)
    return outcomes


def render(outcomes: list[Outcome], command_line: str, repeats: int, load: tuple[float, float]) -> str:
    """The Markdown report: how it was run, the table, and the offenders."""
    lines = [
        "# Shoal against NumPy across sizes",
        "",
        f"`{command_line}`: every example as its own process under NumPy and under Shoal, the two "
        f"alternating, {repeats} repetition{'s' if repeats > 1 else ''} (more where a point was flagged slower), medians "
        f"with [min, max]; peak RSS from `wait4`. {os.cpu_count()} cores, Python "
        f"{platform.python_version()}; load average {load[0]:.1f} at the start, {load[1]:.1f} at the end.",
        "",
        "Ratios above 1.00x mean Shoal took longer or held more memory. SLOWER: Shoal's fastest run "
        "was slower than NumPy's slowest; MORE MEMORY: Shoal's smallest peak exceeded NumPy's largest.",
        "",
        HEADER,
        "|" + "---|" * (HEADER.count("|") - 1),
    ]
    offenders = []
    for outcome in outcomes:
        point = outcome.point
        arguments = arguments_text(point.size, point.example.arguments)
        comparison = outcome.comparison
        if comparison is None:
            lines.append(note_row(point.example.name, point.elements, arguments, outcome.note or "no samples"))
            continue
        lines.append(row(point.example.name, point.elements, arguments, comparison))
        if comparison.offender:
            offenders.append(f"- {point.example.name} at {point.elements:.1e} elements ({arguments}): "
                             + ", ".join(comparison.flags()))
    measured = sum(outcome.comparison is not None for outcome in outcomes)
    lines += ["", f"Offenders: {len(offenders)} of {measured} measured points.", "", *offenders]
    for outcome in outcomes:
        if outcome.comparison is not None and outcome.comparison.checksum_problems:
            lines += ["", f"{outcome.point.example.name} at {outcome.point.size}:",
                      *(f"- {problem}" for problem in outcome.comparison.checksum_problems)]
    return "\n".join(lines) + "\n"


def _examples(text: str) -> tuple[Example, ...]:
    try:
        return tuple(find(name.strip()) for name in text.split(",") if name.strip()) or EXAMPLES
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def parser() -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(prog="python -m benchmarks.size_sweep", description=__doc__.splitlines()[0])
    options.add_argument("--examples", type=_examples, default=EXAMPLES, help="comma-separated (default: all)")
    options.add_argument("--bottom-exponent", type=int, default=BOTTOM_EXPONENT, help="smallest 10^k (default 3)")
    options.add_argument("--top-exponent", type=int, default=None, help="largest 10^k (default 8; 5 with --quick)")
    options.add_argument("--quick", action="store_true", help=f"up to 10^{QUICK_TOP_EXPONENT} elements")
    options.add_argument("--repeats", type=int, default=3, help="repetitions per point (default 3)")
    options.add_argument("--confirm", type=int, default=2, help="extra repetitions of a slower point (default 2)")
    options.add_argument("--memory-limit", type=float, default=MEMORY_LIMIT_GIB, metavar="GIB",
                         help="skip points where NumPy would exceed this peak (default 6)")
    options.add_argument("--timeout", type=float, default=300.0, help="seconds per program run")
    options.add_argument("--output", type=Path, default=None, help="report file (default benchmarks/results/size_sweep.md)")
    return options


def main(argv: list[str] | None = None) -> int:
    """Run the sweep and write the report; returns 1 if a checksum disagrees or a run failed."""
    args = parser().parse_args(argv)
    top = args.top_exponent if args.top_exponent is not None else QUICK_TOP_EXPONENT if args.quick else TOP_EXPONENT
    if not 1 <= args.bottom_exponent <= top:
        raise SystemExit(f"need 1 <= --bottom-exponent <= --top-exponent, got {args.bottom_exponent} and {top}")
    if args.repeats < 1 or args.confirm < 0:
        raise SystemExit(f"--repeats must be at least 1 and --confirm at least 0, got {args.repeats}, {args.confirm}")
    root = repository_root()
    output = args.output or root / "benchmarks" / "results" / "size_sweep.md"
    output.parent.mkdir(parents=True, exist_ok=True)
    command_line = shlex.join(["python", "-m", "benchmarks.size_sweep", *(sys.argv[1:] if argv is None else argv)])
    started, load = time.perf_counter(), os.getloadavg()[0]
    outcomes: list[Outcome] = []
    for example in args.examples:
        points = plan(example, range(args.bottom_exponent, top + 1))
        outcomes += sweep_example(points, args.repeats, args.confirm, root, args.timeout, args.memory_limit * GIB)
        output.write_text(render(outcomes, command_line, args.repeats, (load, os.getloadavg()[0])))
    text = output.read_text()
    print(text)
    print(f"wrote {output} in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    bad = [outcome for outcome in outcomes if outcome.note and outcome.note.startswith("failed")]
    bad += [outcome for outcome in outcomes if outcome.comparison and outcome.comparison.checksum_problems]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())

"""``python -m shoal.demo``: one unmodified NumPy program under ``python`` and ``python -m shoal``.

Each run is a fresh subprocess; the demo prints both checksums and times side by side.

    python -m shoal.demo                         # 5-point Jacobi stencil, 3000 x 3000, 40 sweeps
    python -m shoal.demo black_scholes 4000000   # any example, with its own arguments
    python -m shoal.demo --repeat 3              # alternate the sides, report medians

Options of the demo come before the example's name; everything after it goes to the example.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
DEFAULT_EXAMPLE = "jacobi_stencil"
# 3000 x 3000 float64 is 72 MB per array, far beyond any cache; about 10 s in NumPy on one core.
DEFAULT_ARGUMENTS = ("3000", "--iterations", "40")
RELATIVE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Run:
    """What one run of the example printed, and how long its process took."""

    checksum: float
    compute_seconds: float
    wall_seconds: float


@dataclass(frozen=True)
class Side:
    """One way of running the program: a label and the interpreter prefix."""

    label: str
    prefix: tuple[str, ...]


SIDES = (
    Side("python", (sys.executable,)),
    Side("python -m shoal", (sys.executable, "-m", "shoal")),
)


class DemoError(RuntimeError):
    """A run failed or printed no checksum."""


def _field(output: str, name: str) -> float:
    for line in output.splitlines():
        if line.startswith(f"{name}:"):
            return float(line.split(":", 1)[1])
    raise DemoError(f"the program printed no '{name}:' line; its output was:\n{output}")


def run_once(side: Side, script: Path, arguments: Sequence[str]) -> Run:
    """Run the example once in a fresh process."""
    start = time.perf_counter()
    result = subprocess.run(
        [*side.prefix, str(script), *arguments], capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - start
    if result.returncode != 0:
        raise DemoError(
            f"`{side.label} {script.name}` failed ({result.returncode}):\n{result.stderr}"
        )
    return Run(_field(result.stdout, "checksum"), _field(result.stdout, "time"), wall)


def _describe_machine() -> str:
    from shoal.runtime import default_engine_name
    from shoal.threads import available_cores

    return f"engine: {default_engine_name()}, cores: {available_cores()}"


def _relative_difference(a: float, b: float) -> float:
    scale = max(abs(a), abs(b))
    return abs(a - b) / scale if scale else 0.0


def report(script: Path, arguments: Sequence[str], runs: dict[str, list[Run]]) -> tuple[str, bool]:
    """The side-by-side table and whether the checksums agree."""
    command = " ".join([f"examples/{script.name}", *arguments])
    lines = [f"Shoal demo: {command}", _describe_machine(), ""]
    lines.append(f"{'run':<17} {'checksum':>24} {'compute':>10} {'wall':>10}")
    medians: dict[str, float] = {}
    for label, side_runs in runs.items():
        compute = statistics.median(run.compute_seconds for run in side_runs)
        wall = statistics.median(run.wall_seconds for run in side_runs)
        medians[label] = compute
        checksum = side_runs[0].checksum
        lines.append(f"{label:<17} {checksum!r:>24} {compute:>8.2f} s {wall:>8.2f} s")
    python, shoal = (runs[side.label][0].checksum for side in SIDES)
    difference = _relative_difference(python, shoal)
    agree = difference <= RELATIVE_TOLERANCE
    ratio = medians[SIDES[0].label] / medians[SIDES[1].label]
    repetitions = len(runs[SIDES[0].label])
    lines.append("")
    lines.append(
        f"speed-up of shoal over python (compute time): {ratio:.2f}x"
        + (f" (medians of {repetitions} alternating runs)" if repetitions > 1 else "")
    )
    verdict = "agree" if agree else "DIFFER"
    lines.append(f"checksums {verdict}: relative difference {difference:.1e}")
    return "\n".join(lines), agree


def main(argv: Sequence[str] | None = None) -> int:
    """Run the demo; returns 0 when both runs succeed and their checksums agree."""
    parser = argparse.ArgumentParser(
        prog="python -m shoal.demo", description=__doc__.splitlines()[0]
    )
    parser.add_argument("example", nargs="?", default=DEFAULT_EXAMPLE, help="an examples/ name")
    parser.add_argument("--repeat", type=int, default=1, help="alternating runs of each side")
    parser.add_argument("arguments", nargs=argparse.REMAINDER, help="the example's arguments")
    options = parser.parse_args(argv)
    if options.repeat < 1:
        parser.error(f"--repeat must be at least 1, got {options.repeat}")

    script = EXAMPLES / f"{options.example.removesuffix('.py')}.py"
    if not script.is_file():
        available = sorted(path.stem for path in EXAMPLES.glob("*.py"))
        parser.error(f"no example {options.example!r} in {EXAMPLES}; available: {available}")
    arguments = options.arguments
    if not arguments and script.stem == DEFAULT_EXAMPLE:
        arguments = list(DEFAULT_ARGUMENTS)

    runs: dict[str, list[Run]] = {side.label: [] for side in SIDES}
    try:
        for repetition in range(options.repeat):
            order = SIDES if repetition % 2 == 0 else tuple(reversed(SIDES))
            for side in order:
                print(f"running: {side.label} examples/{script.name} ...", file=sys.stderr)
                runs[side.label].append(run_once(side, script, arguments))
    except DemoError as error:
        print(f"shoal.demo: {error}", file=sys.stderr)
        return 1
    text, agree = report(script, arguments, runs)
    print(text)
    return 0 if agree else 1


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())

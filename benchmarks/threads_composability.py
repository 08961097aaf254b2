"""Side-by-side benchmark of the composability modes (paper 002 §3), scaled to this machine.

Run by hand: ``.venv/bin/python -m benchmarks.threads_composability [--repeats N] [--timeout S] [--default-timeout S]``.
Each (repetition, mode, workload) runs in a fresh process; modes alternate within
each repetition.  Prints one table: median seconds, the median over repetitions of
the ratio to that repetition's ``OMP_NUM_THREADS=1`` run,
and the threads observed by sampling /proc every 5 ms during the run:

* running: threads in state R at once (max over the samples);
* inner threads: Python threads running x the BLAS threads a call would use at
  that moment, i.e. the threads the running calls occupy (95th percentile and max);
* helpers: threads not started by Python (BLAS/OpenMP pools) running at once (max).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

from benchmarks.threads_workloads import WORKLOADS

PROGRAM = str(Path(__file__).with_name("threads_workloads.py"))
BASELINE = "OMP_NUM_THREADS=1"


@dataclass(frozen=True)
class Mode:
    """One way to run the program."""

    name: str
    launcher: tuple[str, ...]
    environment: tuple[tuple[str, str], ...] = ()


MODES = (
    Mode("default", ()),
    Mode(BASELINE, (), (("OMP_NUM_THREADS", "1"),)),
    Mode("smp -f 1", ("-m", "shoal.smp", "-f", "1")),
    Mode("smp (f=2)", ("-m", "shoal.smp")),
    Mode("exclusive", ("-m", "shoal.smp"), (("SHOAL_COMPOSABILITY", "exclusive"),)),
    Mode("counting", ("-m", "shoal.smp"), (("SHOAL_COMPOSABILITY", "counting"),)),
)


@dataclass(frozen=True)
class Run:
    """One measured run; ``seconds`` is a lower bound when ``timed_out``."""

    seconds: float
    timed_out: bool
    max_running: int
    p95_inner: int
    max_inner: int
    max_helpers: int


def run_once(mode: Mode, workload: str, timeout: float, semaphore: str) -> Run:
    environment = {key: value for key, value in os.environ.items() if not key.startswith(("OMP_", "SHOAL_"))}
    environment.update(mode.environment)
    environment["SHOAL_SEMAPHORE_PATH"] = semaphore
    command = [sys.executable, *mode.launcher, PROGRAM, "--cutoff", str(timeout), workload]
    result = subprocess.run(command, capture_output=True, text=True, timeout=timeout + 60, env=environment, check=True)
    record = json.loads(result.stdout.strip().splitlines()[-1])
    return Run(
        record["seconds"],
        record["cut_off"],
        record["max_running"],
        record["p95_inner_threads"],
        record["max_inner_threads"],
        record["max_running_helpers"],
    )


def _worst(runs: list[Run], field: str) -> str:
    return str(max(getattr(run, field) for run in runs))


def _lower_bound(runs: list[Run]) -> str:
    """">" when most runs were cut off, so their median is only a lower bound."""
    return ">" if sum(run.timed_out for run in runs) * 2 > len(runs) else ""


def _format_seconds(runs: list[Run]) -> str:
    return _lower_bound(runs) + f"{statistics.median(run.seconds for run in runs):.2f}"


def table(results: dict[tuple[str, str], list[Run]]) -> str:
    lines = [
        f"| workload | mode | median s | vs {BASELINE} | running threads | inner threads p95 (max) | helpers |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    for workload in WORKLOADS:
        baseline = results[(workload, BASELINE)]
        for mode in MODES:
            runs = results[(workload, mode.name)]
            # Paired: each run against the baseline run of its own repetition, which
            # cancels load that changes slowly over the whole benchmark.
            ratio = statistics.median(run.seconds / base.seconds for run, base in zip(runs, baseline, strict=True))
            lines.append(
                f"| {workload} | {mode.name} | {_format_seconds(runs)} | {_lower_bound(runs)}{ratio:.2f} | "
                f"{_worst(runs, 'max_running')} | {_worst(runs, 'p95_inner')} ({_worst(runs, 'max_inner')}) | "
                f"{_worst(runs, 'max_helpers')} |"
            )
    return "\n".join(lines)


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--repeats", type=int, default=4)
    options.add_argument("--timeout", type=float, default=15.0, help="seconds before a run is cut off")
    options.add_argument("--default-timeout", type=float, default=3.0,
                         help="the cut-off for the default mode, which oversubscribes badly")  # fmt: skip
    arguments = options.parse_args()
    results: dict[tuple[str, str], list[Run]] = {}
    with tempfile.TemporaryDirectory() as directory:
        semaphore = os.path.join(directory, "tokens")
        for repeat in range(arguments.repeats):
            for workload in WORKLOADS:
                for mode in MODES:
                    timeout = arguments.default_timeout if mode.name == "default" else arguments.timeout
                    run = run_once(mode, workload, timeout, semaphore)
                    results.setdefault((workload, mode.name), []).append(run)
                    print(f"# {repeat + 1}/{arguments.repeats} {workload:<22} {mode.name:<18} {run}", file=sys.stderr)
    print(f"cores: {os.cpu_count()}, repetitions: {arguments.repeats}, cut-off: {arguments.timeout:.0f} s "
          f"({arguments.default_timeout:.0f} s for default)")
    print(table(results))


if __name__ == "__main__":
    main()

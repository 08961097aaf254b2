"""An example under NumPy and under Shoal with an empty and with a warm kernel cache, alternating.

Each repetition runs, in rotating order: ``python EXAMPLE``, ``python -m shoal EXAMPLE`` with a
fresh ``SHOAL_CACHE_DIR`` (what a first run gets) and ``python -m shoal EXAMPLE`` with a cache
that a compiling run filled beforehand (what every later run gets). Prints each repetition, the
median of each program's own timed section, the median of the whole process's wall time (which
includes start-up; a kernel still being compiled at exit is finished by the compiler alone,
which the benchmark waits for between runs, untimed) and the median of the
per-repetition speed-ups of the timed sections.

    python benchmarks/kernel_cache_states.py black_scholes.py 4000000 --days 5 [--reps 5]
    python benchmarks/kernel_cache_states.py jacobi_stencil.py 4096 --iterations 10 --states numpy,shoal-empty-cache
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil

from shoal.engine.node.compile.process import workers_for

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
STATES = ("numpy", "shoal-empty-cache", "shoal-warm-cache")
COMPILER_PATIENCE_SECONDS = 600.0


def timed_section(command: list[str], cache: Path | None) -> tuple[float, float]:
    """Run ``command``; return the ``time:`` the program printed and the process's wall time."""
    environment = dict(os.environ)
    if cache is not None:
        environment["SHOAL_CACHE_DIR"] = str(cache)
    started = time.perf_counter()
    done = subprocess.run(command, env=environment, capture_output=True, text=True, check=True)
    wall = time.perf_counter() - started
    match = re.search(r"^time: ([0-9.]+)", done.stdout, re.MULTILINE)
    if match is None:
        raise RuntimeError(f"{command} printed no time: {done.stdout!r} {done.stderr!r}")
    return float(match.group(1)), wall


def settle_compilers(cache: Path) -> float:
    """Wait for compile workers that finish kernels for ``cache`` after their program exited
    (outside every timing, so that they do not compete with the next run); seconds waited."""
    started = time.perf_counter()
    psutil.wait_procs(workers_for(cache), timeout=COMPILER_PATIENCE_SECONDS)
    return time.perf_counter() - started


def parse_states(text: str) -> tuple[str, ...]:
    states = tuple(state.strip() for state in text.split(",") if state.strip())
    unknown = [state for state in states if state not in STATES]
    if unknown or "numpy" not in states:
        raise argparse.ArgumentTypeError(f"--states takes numpy and any of {', '.join(STATES[1:])}, got {text!r}")
    return states


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("example")
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--states", type=parse_states, default=STATES, help="comma-separated, numpy first among them")
    known, arguments = parser.parse_known_args()
    states: tuple[str, ...] = known.states
    program = [str(EXAMPLES / known.example), *arguments]
    plain = [sys.executable, *program]
    shoal = [sys.executable, "-m", "shoal", *program]
    with tempfile.TemporaryDirectory(prefix="shoal-bench-cache-") as scratch:
        warm = Path(scratch) / "warm"
        if "shoal-warm-cache" in states:
            environment = {**os.environ, "SHOAL_CACHE_DIR": str(warm), "SHOAL_COMPILE": "sync"}
            subprocess.run(shoal, env=environment, capture_output=True, check=True)
        times: dict[str, list[float]] = {state: [] for state in states}
        walls: dict[str, list[float]] = {state: [] for state in states}
        speedups: dict[str, list[float]] = {state: [] for state in states}
        for rep in range(known.reps):
            order = states[rep % len(states) :] + states[: rep % len(states)]
            got: dict[str, float] = {}
            for state in order:
                if state == "numpy":
                    got[state], wall = timed_section(plain, None)
                elif state == "shoal-warm-cache":
                    got[state], wall = timed_section(shoal, warm)
                else:
                    empty = Path(scratch) / f"empty-{rep}"
                    got[state], wall = timed_section(shoal, empty)
                    settle_compilers(empty)
                    shutil.rmtree(empty, ignore_errors=True)
                times[state].append(got[state])
                walls[state].append(wall)
            for state in states:
                speedups[state].append(got["numpy"] / got[state])
            print(f"repetition {rep}: " + "  ".join(f"{state} {got[state]:.3f} s ({walls[state][-1]:.2f} s wall)" for state in states), flush=True)
    print("median seconds:  " + "  ".join(f"{state} {statistics.median(times[state]):.3f}" for state in states))
    print("median wall:     " + "  ".join(f"{state} {statistics.median(walls[state]):.2f}" for state in states))
    print("median speed-up: " + "  ".join(f"{state} {statistics.median(speedups[state]):.2f}x" for state in states))


if __name__ == "__main__":
    main()

"""An example under NumPy and under Shoal with an empty and with a warm kernel cache, alternating.

Each repetition runs, in rotating order: ``python EXAMPLE``, ``python -m shoal EXAMPLE`` with a
fresh ``SHOAL_CACHE_DIR`` (what a first run gets) and ``python -m shoal EXAMPLE`` with a cache
that a compiling run filled beforehand (what every later run gets). Prints each repetition, the
median of each program's own timed section and the median of the per-repetition speed-ups.

    python benchmarks/kernel_cache_states.py black_scholes.py 4000000 --days 5 [--reps 5]
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
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
TOOLS = ("numpy", "shoal-empty-cache", "shoal-warm-cache")


def timed_section(command: list[str], cache: Path | None) -> float:
    """Run ``command`` and return the ``time:`` the program printed."""
    environment = dict(os.environ)
    if cache is not None:
        environment["SHOAL_CACHE_DIR"] = str(cache)
    done = subprocess.run(command, env=environment, capture_output=True, text=True, check=True)
    match = re.search(r"^time: ([0-9.]+)", done.stdout, re.MULTILINE)
    if match is None:
        raise RuntimeError(f"{command} printed no time: {done.stdout!r} {done.stderr!r}")
    return float(match.group(1))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("example")
    parser.add_argument("--reps", type=int, default=5)
    known, arguments = parser.parse_known_args()
    program = [str(EXAMPLES / known.example), *arguments]
    plain = [sys.executable, *program]
    shoal = [sys.executable, "-m", "shoal", *program]
    with tempfile.TemporaryDirectory(prefix="shoal-bench-cache-") as scratch:
        warm = Path(scratch) / "warm"
        subprocess.run(shoal, env={**os.environ, "SHOAL_CACHE_DIR": str(warm), "SHOAL_COMPILE": "sync"}, capture_output=True, check=True)
        times: dict[str, list[float]] = {tool: [] for tool in TOOLS}
        speedups: dict[str, list[float]] = {tool: [] for tool in TOOLS}
        for rep in range(known.reps):
            order = TOOLS[rep % len(TOOLS) :] + TOOLS[: rep % len(TOOLS)]
            got: dict[str, float] = {}
            for tool in order:
                if tool == "numpy":
                    got[tool] = timed_section(plain, None)
                elif tool == "shoal-warm-cache":
                    got[tool] = timed_section(shoal, warm)
                else:
                    empty = Path(scratch) / f"empty-{rep}"
                    got[tool] = timed_section(shoal, empty)
                    shutil.rmtree(empty, ignore_errors=True)
                times[tool].append(got[tool])
            for tool in TOOLS:
                speedups[tool].append(got["numpy"] / got[tool])
            print(f"repetition {rep}: " + "  ".join(f"{tool} {got[tool]:.3f} s" for tool in TOOLS), flush=True)
    print("median seconds:  " + "  ".join(f"{tool} {statistics.median(times[tool]):.3f}" for tool in TOOLS))
    print("median speed-up: " + "  ".join(f"{tool} {statistics.median(speedups[tool]):.2f}x" for tool in TOOLS))


if __name__ == "__main__":
    main()

"""The first runs of an example under Shoal from an empty kernel cache, against NumPy.

Kernels compile once the NumPy time spent on them (remembered across runs) outweighs what
compiling costs, so the first runs of a program show how soon that happens. Each repetition
starts a fresh ``SHOAL_CACHE_DIR`` and runs the example ``--runs`` times under ``python -m
shoal`` with that cache, each run right after a run of ``python EXAMPLE``. A kernel still being
compiled when a run exits is finished by the compiler alone; the benchmark waits for it before the
next pair (untimed, so that it competes with neither program) and reports how long that took.
Prints every pair (and how many kernel libraries the cache holds after it) and, per run index, the
median speed-up of the timed sections and the median wall time of the whole Shoal process
(start-up included).

    python -m benchmarks.first_runs black_scholes.py 4000000 --days 5 [--runs 4] [--reps 3]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from benchmarks.kernel_cache_states import EXAMPLES, settle_compilers, timed_section


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("example")
    parser.add_argument("--runs", type=int, default=4, help="Shoal runs sharing one kernel cache")
    parser.add_argument("--reps", type=int, default=3)
    known, arguments = parser.parse_known_args()
    program = [str(EXAMPLES / known.example), *arguments]
    plain = [sys.executable, *program]
    shoal = [sys.executable, "-m", "shoal", *program]
    speedups: list[list[float]] = [[] for _ in range(known.runs)]
    walls: list[list[float]] = [[] for _ in range(known.runs)]
    for rep in range(known.reps):
        with tempfile.TemporaryDirectory(prefix="shoal-first-runs-") as cache:
            for run in range(known.runs):
                numpy_seconds, _ = timed_section(plain, None)
                shoal_seconds, wall = timed_section(shoal, Path(cache))
                compiling = settle_compilers(Path(cache))
                speedups[run].append(numpy_seconds / shoal_seconds)
                walls[run].append(wall)
                libraries = len(list((Path(cache) / "kernels").glob("*.so")))
                print(
                    f"repetition {rep} run {run + 1}: numpy {numpy_seconds:.3f} s  shoal {shoal_seconds:.3f} s"
                    f" ({wall:.2f} s wall, {libraries} kernel libraries cached {compiling:.2f} s after exit)",
                    flush=True,
                )
    for run in range(known.runs):
        print(f"run {run + 1}: median speed-up {statistics.median(speedups[run]):.2f}x  (range {min(speedups[run]):.2f}-{max(speedups[run]):.2f}x), shoal wall {statistics.median(walls[run]):.2f} s")


if __name__ == "__main__":
    main()

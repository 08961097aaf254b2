"""The examples at N ranks on one host against one process (issue 11's "within 10%" target).

``python -m benchmarks.cluster_one_host [--ranks 2] [--repeat 3] [--out PATH] [--baseline
NAME=VALUE,...]`` runs each example under ``mpiexec -n N python -m shoal`` and under ``python -m
shoal`` (one process, every core), alternating within each repetition, and reports the medians
of the programs' own ``time:`` lines, their ratio, and whether the checksums agree to 1e-9; with
``--out`` it writes a Markdown table. With ``--baseline`` the ranks run a third time in each
repetition with those settings added (another tree: ``PYTHONSAFEPATH=1,PYTHONPATH=<worktree>``).
The programs' first batches and compiles are inside their timings, as a user sees them.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

from benchmarks.baseline import with_settings
from benchmarks.cluster_layout import mpiexec

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples"
PROGRAMS: dict[str, list[str]] = {
    "jacobi_stencil.py": ["2000", "--iterations", "50"],
    "heat_equation.py": ["1000", "--epsilon", "0.0001", "--max-iterations", "400"],
    "black_scholes.py": ["1000000", "--days", "30"],
    "shallow_water.py": ["1022", "--steps", "10"],
    "lattice_boltzmann.py": ["512", "--steps", "5"],
    "mandelbrot.py": ["1024", "--iterations", "30"],
    "nbody.py": ["1000", "--steps", "5"],
    "knn.py": ["10000"],
}


def once(program: str, ranks: int, environment: dict[str, str] | None = None) -> tuple[float, float]:
    """The program's own time and checksum, at ``ranks`` ranks (0: one process, no mpiexec), in
    ``environment`` (by default this process's)."""
    line = [sys.executable, "-m", "shoal", str(EXAMPLES / program), *PROGRAMS[program]]
    command = line if ranks == 0 else [mpiexec(), "-n", str(ranks), *line]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False, env=environment)
    if result.returncode:
        raise SystemExit(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
    values = dict(line.split(": ", 1) for line in result.stdout.splitlines() if ": " in line)
    return float(values["time"]), float(values["checksum"])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", nargs="+", default=list(PROGRAMS), choices=list(PROGRAMS))
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--baseline", default=None, metavar="NAME=VALUE[,NAME=VALUE]", help="also run the ranks with these settings added, alternating")
    arguments = parser.parse_args(argv)
    baseline = with_settings(dict(os.environ), arguments.baseline) if arguments.baseline else None
    before = os.getloadavg()
    rows = []
    for program in arguments.programs:
        times: dict[str, list[float]] = {"ranks": [], "alone": [], "baseline": []}
        sums: dict[str, float] = {}
        for _ in range(arguments.repeat):
            for label in ("ranks", "alone", "baseline"):
                if label == "baseline" and baseline is None:
                    continue
                seconds, sums[label] = once(program, 0 if label == "alone" else arguments.ranks, baseline if label == "baseline" else None)
                times[label].append(seconds)
        ranked, alone = statistics.median(times["ranks"]), statistics.median(times["alone"])
        agree = abs(sums["ranks"] - sums["alone"]) <= 1e-9 * max(1.0, abs(sums["alone"]))
        row = f"| {program} {' '.join(PROGRAMS[program])} | {ranked:.3f} | {alone:.3f} | {ranked / alone:.2f} | {'yes' if agree else 'NO'} |"
        if baseline is not None:
            other = statistics.median(times["baseline"])
            row += f" {other:.3f} | {other / alone:.2f} |"
        rows.append(row)
        print(rows[-1], flush=True)
    after = os.getloadavg()
    stamp = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    text = "\n".join(
        [
            f"# The examples at {arguments.ranks} ranks on one host against one process ({stamp}; {os.cpu_count()} cores)",
            "",
            f"`python -m benchmarks.cluster_one_host --ranks {arguments.ranks} --repeat {arguments.repeat}`: medians of the programs' own",
            f"`time:`, alternating; load average before {before[0]:.1f} {before[1]:.1f}, after {after[0]:.1f} {after[1]:.1f}.",
            "Target (issue 11): no slower than one process beyond 10%."
            + (f" Baseline: the ranks with `{arguments.baseline}`, in the same alternation." if baseline else ""),
            "",
            f"| program and arguments | {arguments.ranks} ranks s | one process s | ratio | checksums agree |" + (" baseline s | baseline ratio |" if baseline else ""),
            "|---|---:|---:|---:|---|" + ("---:|---:|" if baseline else ""),
            *rows,
            "",
        ]
    )
    if arguments.out:
        arguments.out.write_text(text)
    print(text)


if __name__ == "__main__":
    main()

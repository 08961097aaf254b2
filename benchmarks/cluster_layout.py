"""Row layout against block-cyclic layout on one host: Jacobi and an LU-like triangular loop.

``python -m benchmarks.cluster_layout [--ranks 2 3] [--repeat 3]`` runs each program under
``mpiexec -n N python -m shoal`` with ``SHOAL_CLUSTER_LAYOUT=rows`` and ``block-cyclic`` (and any
``--blocks``), alternating within each repetition, and prints the median wall time of each, the
checksums (which must agree) and the load average.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PROGRAMS = {
    "jacobi": (ROOT / "examples" / "jacobi_stencil.py", ["2000", "--iterations", "50"]),
    "lu": (ROOT / "tests" / "cluster" / "programs" / "lu_like.py", ["1000"]),
}


def mpiexec() -> str:
    beside = Path(sys.executable).parent / "mpiexec"
    return str(beside) if beside.exists() else "mpiexec"


def once(program: str, ranks: int, layout: str, block: str) -> tuple[float, str]:
    path, arguments = PROGRAMS[program]
    env = dict(os.environ, SHOAL_CLUSTER_LAYOUT=layout, SHOAL_CLUSTER_BLOCK=block)
    command = [mpiexec(), "-n", str(ranks), sys.executable, "-m", "shoal", str(path), *arguments]
    began = time.perf_counter()
    result = subprocess.run(command, capture_output=True, text=True, env=env, timeout=600, check=False)
    seconds = time.perf_counter() - began
    if result.returncode:
        raise SystemExit(f"{' '.join(command)} failed:\n{result.stderr}")
    checksum = next(line for line in result.stdout.splitlines() if line.startswith("checksum:"))
    return seconds, checksum


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", nargs="+", default=sorted(PROGRAMS), choices=sorted(PROGRAMS))
    parser.add_argument("--ranks", nargs="+", type=int, default=[2, 3])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--blocks", nargs="+", default=["auto"], help="SHOAL_CLUSTER_BLOCK values for block-cyclic")
    arguments = parser.parse_args()
    variants = [("rows", "auto"), *(("block-cyclic", block) for block in arguments.blocks)]
    print(f"load average before: {os.getloadavg()}")
    for program in arguments.programs:
        for ranks in arguments.ranks:
            times: dict[tuple[str, str], list[float]] = {variant: [] for variant in variants}
            sums = set()
            for _ in range(arguments.repeat):
                for variant in variants:
                    seconds, checksum = once(program, ranks, *variant)
                    times[variant].append(seconds)
                    sums.add(checksum)
            for (layout, block), found in times.items():
                runs = " ".join(f"{t:.2f}" for t in found)
                print(f"{program} ranks={ranks} {layout:12} block={block:6} median {statistics.median(found):.2f} s  ({runs})")
            print(f"{program} ranks={ranks} checksums: {sorted(sums)}  load {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

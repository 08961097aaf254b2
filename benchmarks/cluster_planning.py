"""Cluster planning of batches not seen before, per instruction, with the plan cache off.

``python -m benchmarks.cluster_planning [--programs ...] [--repeat 5] [--baseline NAME=VALUE,...]``
runs each example once under ``mpiexec -n 2 python -m shoal``, keeping the batches rank 0's
cluster component receives (their bytecode, which bases carry data, where rank 0 cut them), then
plans all of them afresh for rank 0 and rank 1 of 2 in a process of its own (the plan cache off,
every batch planned as if never seen) and reports the planning time per instruction: median and
minimum over the repetitions, each repetition the best of three passes. With ``--baseline`` the
planning runs a second time in each repetition with those settings added (another tree:
``PYTHONSAFEPATH=1,PYTHONPATH=<worktree>``), alternating. Planning is deterministic Python, so
the figure moves only with the machine; the batches' data is not kept (planning reads only its
size).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import runpy
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
PLANNED = ("black_scholes.py", "heat_equation.py", "shallow_water.py", "lattice_boltzmann.py")  # at cluster_one_host's sizes
PASSES = 3


def capture(folder: Path, program: list[str]) -> None:
    """Run ``python -m shoal program...`` on this rank; rank 0 writes its batches to ``folder``."""
    import shoal.cluster.rank as rank_module
    from shoal.bytecode import Batch, dumps

    kept: list[tuple[bytes, list[int], list[int] | None]] = []
    config: list[object] = []
    plain_init, plain_execute = rank_module.RankEngine.__init__, rank_module.RankEngine.execute

    def init(self: rank_module.RankEngine, *args: object, **kwargs: object) -> None:
        plain_init(self, *args, **kwargs)  # type: ignore[arg-type]
        config.append(self.planner.config)

    def execute(self: rank_module.RankEngine, batch: Batch, watched: int = 0, keyed: object = False, starts: list[int] | None = None) -> str | None:
        if self.rank == 0:
            kept.append((dumps(Batch(bases=batch.bases, instructions=batch.instructions)), sorted(batch.data), starts))
        return plain_execute(self, batch, watched, keyed, starts)  # type: ignore[arg-type]

    rank_module.RankEngine.__init__ = init  # type: ignore[method-assign]
    rank_module.RankEngine.execute = execute  # type: ignore[method-assign]
    sys.argv = ["shoal", *program]
    try:
        runpy.run_module("shoal", run_name="__main__", alter_sys=True)
    except SystemExit as stop:
        if stop.code:
            raise
    finally:
        if kept:
            (folder / "config.json").write_text(json.dumps(dataclasses.asdict(config[0])))  # type: ignore[call-overload]
            for number, (code, carried, starts) in enumerate(kept):
                (folder / f"{number:05d}.bytecode").write_bytes(code)
                (folder / f"{number:05d}.json").write_text(json.dumps({"carried": carried, "starts": starts}))


def plan(folder: Path) -> None:
    """Print the best of ``PASSES`` passes of planning ``folder``'s batches, in µs an instruction."""
    import numpy as np

    from shoal.bytecode import loads
    from shoal.cluster import split_plans
    from shoal.cluster.plan import PlanConfig, Planner

    settings = json.loads((folder / "config.json").read_text())
    settings["block"] = tuple(settings["block"])
    config = dataclasses.replace(PlanConfig(**{key: value for key, value in settings.items() if key in {field.name for field in dataclasses.fields(PlanConfig)}}), cache_size=0)
    batches = []
    for code in sorted(folder.glob("*.bytecode")):
        batch = loads(code.read_bytes())
        facts = json.loads(code.with_suffix(".json").read_text())
        sizes = {decl.id: decl for decl in batch.bases}
        batch.data = {base: np.zeros(sizes[base].size, sizes[base].dtype) for base in facts["carried"]}
        batches.append((batch, facts["starts"]))
    count = sum(len(batch.instructions) for batch, _ in batches)
    best = []
    for rank in (0, 1):
        seconds = []
        for _ in range(PASSES):
            planner = Planner(rank, 2, config, 16383)
            began = time.perf_counter()
            _plan_all(planner, batches, split_plans.plan_parts)
            seconds.append(time.perf_counter() - began)
        best.append(min(seconds))
    print(json.dumps({"instructions": count, "us": [value / count * 1e6 for value in best]}))


def _plan_all(planner: Any, batches: list[tuple[Any, list[int] | None]], plan_parts: Any) -> None:
    """Plan ``batches`` in turn as a rank does (cut into loop iterations where rank 0 cut them)."""

    def plan_one(part: Any, key: Any, kept: Any) -> tuple[Any, Any]:
        return planner.plan(part, key, kept), planner.template

    for batch, starts in batches:
        planner.choose_rows(batch)
        keyed = planner.keyed(batch)
        if plan_parts(planner, batch, keyed, plan_one, starts) is None:
            planner.plan(batch, keyed)


def _planned(folder: Path, environment: dict[str, str] | None) -> tuple[int, list[float]]:
    """The instructions of ``folder``'s batches and each rank's µs an instruction, planned in a
    process of its own (``environment``: another tree's, or None for this one's)."""
    command = [sys.executable, str(Path(__file__).resolve()), "--plan", str(folder)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False, env=environment)
    if result.returncode:
        raise SystemExit(f"planning {folder} failed:\n{result.stderr[-3000:]}")
    found = json.loads(result.stdout.splitlines()[-1])
    return found["instructions"], found["us"]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", nargs="+", default=list(PLANNED), choices=list(PLANNED))
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--baseline", default=None, metavar="NAME=VALUE[,NAME=VALUE]", help="also plan with these settings added, alternating")
    parser.add_argument("--capture", type=Path, help=argparse.SUPPRESS)
    parser.add_argument("--plan", type=Path, help=argparse.SUPPRESS)
    arguments, program = parser.parse_known_args(argv)
    if arguments.capture is not None:
        capture(arguments.capture, program[1:] if program[:1] == ["--"] else program)
        return
    if arguments.plan is not None:
        plan(arguments.plan)
        return
    # imported here: a baseline tree's planning runs this file alone
    from benchmarks.baseline import with_settings
    from benchmarks.cluster_layout import mpiexec
    from benchmarks.cluster_one_host import EXAMPLES, PROGRAMS

    baseline = with_settings(dict(os.environ), arguments.baseline) if arguments.baseline else None
    print("| program | instructions | rank 0 µs an instruction | rank 1 | baseline rank 0 | baseline rank 1 |")
    print("|---|---:|---:|---:|---:|---:|")
    for name in arguments.programs:
        with tempfile.TemporaryDirectory(prefix="shoal-planning-") as folder:
            command = [mpiexec(), "-n", "2", sys.executable, "-m", "benchmarks.cluster_planning", "--capture", folder, "--", str(EXAMPLES / name), *PROGRAMS[name]]
            result = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False, cwd=ROOT)
            if result.returncode:
                raise SystemExit(f"{' '.join(command)} failed:\n{result.stderr[-3000:]}")
            runs: dict[str, list[list[float]]] = {"this": [], "baseline": []}
            count = 0
            for _ in range(arguments.repeat):
                count, seconds = _planned(Path(folder), None)
                runs["this"].append(seconds)
                if baseline is not None:
                    runs["baseline"].append(_planned(Path(folder), baseline)[1])
            cells = []
            for label in ("this", "baseline"):
                for rank in (0, 1):
                    values = [run[rank] for run in runs[label]]
                    cells.append(f"{statistics.median(values):.1f} (min {min(values):.1f})" if values else "-")
            print(f"| {name} {' '.join(PROGRAMS[name])} | {count} | {' | '.join(cells)} |", flush=True)


if __name__ == "__main__":
    main()

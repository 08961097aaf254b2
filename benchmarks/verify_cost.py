"""What full verification costs per instruction, next to what running the batch costs.

Runs two examples with the arguments ``python -m shoal.bench`` gives them (the Jacobi stencil
and Black-Scholes) and two loop patterns at their medium size (Jacobi 1-D and Floyd-Warshall:
one batch of many alike iterations), with ``shoal.numpy`` as their NumPy, on the node engine with
verification at ``execute`` off, recording their batches; then times
:func:`shoal.bytecode.verify` (structure, memory bounds, shapes and attributes) on each recorded
batch against the bases known before it, in full and with the hints the node engine gives a
batch of a new structure (``shoal.bytecode.alike``: a repeated instruction compared with its
model), and prints microseconds per instruction and the share of the engine's own ``execute``
time (fastest of ``--repeats`` runs of each).

    python benchmarks/verify_cost.py [--repeats 5]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from shoal import runtime
from shoal.bytecode import BaseDecl, Batch, View, verify
from shoal.bytecode.alike import repeat_models
from shoal.engine import Component
from shoal.engine.node import NodeConfig, NodeEngine


class Recording(Component):
    """The node engine (verification off), keeping every batch with the bases known before it."""

    name = "recording"

    def __init__(self) -> None:
        self.engine = NodeEngine(NodeConfig.from_settings(verify=None))
        self.batches: list[tuple[Batch, dict[int, BaseDecl]]] = []
        self.execute_seconds = 0.0
        self._known: dict[int, BaseDecl] = {}

    @classmethod
    def configure(cls, environ=None) -> None:
        return None

    def execute(self, batch: Batch) -> None:
        known = dict(self._known)
        kept = Batch(list(batch.bases), dict(batch.data), list(batch.instructions))
        started = time.perf_counter()
        self.engine.execute(batch)
        self.execute_seconds += time.perf_counter() - started
        self.batches.append((kept, known))
        self._known.update((decl.id, decl) for decl in batch.bases)
        for instruction in batch.instructions:
            if instruction.op == "release":
                self._known.pop(instruction.attr("base"), None)

    def fetch(self, view: View) -> np.ndarray:
        return self.engine.fetch(view)

    def shutdown(self) -> None:
        self.engine.shutdown()


EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
LOOPS = Path(__file__).resolve().parent / "loops"
WORKLOADS = {
    "jacobi_stencil": (EXAMPLES, ["4096", "--iterations", "10"]),
    "black_scholes": (EXAMPLES, ["4000000", "--days", "5"]),
    "jacobi_1d": (LOOPS, ["1000000", "--steps", "40"]),
    "floyd_warshall": (LOOPS, ["1000", "--steps", "200"]),
}


def run_example(name: str, arguments: list[str], folder: Path = EXAMPLES) -> None:
    """Run ``<folder>/<name>.py`` in this process with ``shoal.numpy`` as its NumPy."""
    path = folder / f"{name}.py"
    source = path.read_text().replace("import numpy as np", "import shoal.numpy as np")
    namespace: dict[str, object] = {"__name__": f"example_{name}"}
    exec(compile(source, str(path), "exec"), namespace)
    saved = sys.argv
    sys.argv = [str(path), *arguments]
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            namespace["main"]()  # type: ignore[operator]
    finally:
        sys.argv = saved


def measure(name: str, folder: Path, arguments: list[str], repeats: int) -> None:
    """Run example ``name`` ``repeats`` times, verify its batches ``repeats`` times; print the
    fastest of each (the least disturbed by other work on the machine)."""
    executes = []
    for _ in range(repeats):
        recording = Recording()
        with runtime.configure(engine=recording):
            run_example(name, arguments, folder)
        executes.append(recording.execute_seconds)
    instructions = sum(len(batch) for batch, _ in recording.batches)
    timings = []
    hinted = []
    for _ in range(repeats):
        started = time.perf_counter()
        for batch, known in recording.batches:
            verify(batch, known)
        timings.append(time.perf_counter() - started)
        started = time.perf_counter()
        for batch, known in recording.batches:
            verify(batch, known, alike=repeat_models(batch.instructions))
        hinted.append(time.perf_counter() - started)
    seconds, execute, with_hints = min(timings), min(executes), min(hinted)
    print(
        f"{name:14s} {len(recording.batches):4d} batches {instructions:6d} instructions  "
        f"verify {seconds * 1e3:7.2f} ms = {seconds / max(1, instructions) * 1e6:5.2f} us/instruction, "
        f"with hints {with_hints * 1e3:7.2f} ms  "
        f"engine execute {execute * 1e3:8.1f} ms (median {statistics.median(executes) * 1e3:8.1f})  "
        f"share {seconds / execute * 100:5.2f} % ({with_hints / execute * 100:5.2f} % with hints)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for name, (folder, arguments) in WORKLOADS.items():
        measure(name, folder, arguments, args.repeats)


if __name__ == "__main__":
    main()

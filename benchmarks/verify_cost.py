"""What full verification costs per instruction, next to what running the batch costs.

Records the batches of two example workloads (the Jacobi stencil and Black-Scholes, written with
``shoal.numpy`` as in ``examples/``) on the node engine with verification at ``execute`` off,
then times :func:`shoal.bytecode.verify` (structure, memory bounds, shapes and attributes) on
each recorded batch against the bases known before it, and prints microseconds per instruction
and the share of the engine's own wall time.

    python benchmarks/verify_cost.py [--size 1000] [--steps 40] [--repeats 5]
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import shoal.numpy as snp
from shoal import runtime
from shoal.bytecode import BaseDecl, Batch, VerifyLimits, View, verify
from shoal.engine import Component, Config
from shoal.engine.node import NodeEngine


class Recording(Component):
    """The node engine (verification off), keeping every batch with the bases known before it."""

    name = "recording"

    def __init__(self) -> None:
        self.engine = NodeEngine()
        self.batches: list[tuple[Batch, dict[int, BaseDecl]]] = []
        self.execute_seconds = 0.0
        self._known: dict[int, BaseDecl] = {}

    def init(self, config: Config) -> None:
        self.engine.init(Config(config.threads, config.block_size, {**config.options, "verify": "off"}))

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

    def release(self, base: int) -> None:
        self._known.pop(base, None)
        self.engine.release(base)

    def shutdown(self) -> None:
        self.engine.shutdown()


def jacobi(size: int, steps: int) -> float:
    grid = snp.array(np.random.default_rng(42).random((size, size)))
    for _ in range(steps):
        grid[1:-1, 1:-1] = 0.2 * (grid[1:-1, 1:-1] + grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:])
    return float(snp.sum(grid))


def black_scholes(size: int, steps: int) -> float:
    rng = np.random.default_rng(7)
    price = snp.array(rng.uniform(10.0, 50.0, size * size))
    strike = snp.array(rng.uniform(10.0, 50.0, size * size))
    total = 0.0
    for day in range(1, steps + 1):
        t = day / 365.0
        d1 = (snp.log(price / strike) + (0.02 + 0.5 * 0.09) * t) / (0.3 * snp.sqrt(t))
        d2 = d1 - 0.3 * snp.sqrt(t)
        cdf1 = 0.5 * (1.0 + snp.tanh(0.7978845608 * (d1 + 0.044715 * d1**3)))
        cdf2 = 0.5 * (1.0 + snp.tanh(0.7978845608 * (d2 + 0.044715 * d2**3)))
        call = price * cdf1 - strike * snp.exp(-0.02 * t) * cdf2
        total += float(snp.sum(call))
    return total


def measure(name: str, workload, size: int, steps: int, repeats: int) -> None:
    recording = Recording()
    with runtime.configure(engine=recording):
        workload(size, steps)
    instructions = sum(len(batch) for batch, _ in recording.batches)
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        for batch, known in recording.batches:
            verify(batch, known, limits=VerifyLimits(max_work=1 << 60))
        timings.append(time.perf_counter() - started)
    seconds = statistics.median(timings)
    print(
        f"{name:14s} {len(recording.batches):4d} batches {instructions:6d} instructions  "
        f"verify {seconds * 1e3:8.2f} ms = {seconds / max(1, instructions) * 1e6:6.2f} us/instruction  "
        f"engine execute {recording.execute_seconds * 1e3:9.1f} ms  "
        f"share {seconds / recording.execute_seconds * 100:5.2f} %"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    for name, workload in (("jacobi_stencil", jacobi), ("black_scholes", black_scholes)):
        measure(name, workload, args.size, args.steps, args.repeats)


if __name__ == "__main__":
    main()

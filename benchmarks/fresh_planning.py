"""What planning a batch seen for the first time costs the node engine, for loops as programs
record them.

A loop's first batches, and every batch of a loop whose batches do not repeat, are planned from
scratch: grouping, lowering and building block operations, at tens of microseconds an
instruction (``per_op_cost``'s "fresh: plan" column, for a synthetic body). Here three loop bodies
of the examples and the loop suite are recorded into one batch each (the flush threshold raised
so that nothing flushes while recording), the engine forgets every plan and verified structure,
and the flush is timed on the program thread's CPU clock (``time.thread_time``, also inside the
engine, whose ``plan_seconds`` is read): planning runs on that thread, so the figure barely moves
when other processes load the machine. Medians of ``--repeats`` flushes.

- Black-Scholes, 9 days of 10^6 options (``examples/black_scholes.py``'s ``price``);
- Floyd-Warshall on a 1000 x 1000 matrix, 100 intermediate vertices (``benchmarks/loops``);
- FDTD on 1000 x 1000 grids, 40 time steps (``benchmarks/loops/fdtd_2d.py``'s step).

Run: ``python -m benchmarks.fresh_planning [--repeats 7]``; to compare trees, run it with
``PYTHONSAFEPATH=1 PYTHONPATH=<other checkout>`` in alternation.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

import shoal.numpy as np
from shoal import runtime as shoal_runtime

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"
RECORD_ONLY_FLUSH_THRESHOLD = 10**9


def black_scholes(days: int = 9, size: int = 1_000_000) -> Callable[[], object]:
    """A recorder of ``days`` repricings of ``size`` options."""
    sys.path.insert(0, str(EXAMPLES))
    try:
        import black_scholes as example
    finally:
        sys.path.remove(str(EXAMPLES))
    example.np = np  # the example's own code, on Shoal's arrays
    rng = np.random.default_rng(1)
    spot, strike, years = rng.uniform(10.0, 100.0, size), rng.uniform(10.0, 100.0, size), rng.uniform(0.5, 2.0, size)

    def record() -> object:
        total = 0.0
        for day in range(days):
            call, put = example.price(spot, strike, years - day / 365.0, 0.02, 0.3)
            total += np.mean(call) + np.mean(put)
        return total

    return record


def floyd_warshall(steps: int = 100, size: int = 1000) -> Callable[[], object]:
    path = np.random.default_rng(1).random((size, size)) * 100.0

    def record() -> object:
        shortest = path
        for k in range(steps):
            shortest = np.minimum(shortest, shortest[:, k, np.newaxis] + shortest[np.newaxis, k, :])
        return shortest

    return record


def fdtd(steps: int = 40, size: int = 1000) -> Callable[[], object]:
    rng = np.random.default_rng(1)
    ex, ey, hz = rng.random((size, size)), rng.random((size, size)), rng.random((size, size))

    def record() -> object:
        for t in range(steps):
            ey[0, :] = float(t)
            ey[1:, :] -= 0.5 * (hz[1:, :] - hz[:-1, :])
            ex[:, 1:] -= 0.5 * (hz[:, 1:] - hz[:, :-1])
            hz[:-1, :-1] -= 0.7 * (ex[:-1, 1:] - ex[:-1, :-1] + ey[1:, :-1] - ey[:-1, :-1])
        return hz

    return record


LOOPS = {"black_scholes 9 days": black_scholes, "floyd_warshall 1000 x 100": floyd_warshall, "fdtd_2d 1000 x 40": fdtd}


def fresh_plan(make: Callable[[], Callable[[], object]], repeats: int) -> tuple[int, int, list[float]]:
    """Instructions, block operations and the planning seconds of each fresh flush."""
    runtime = shoal_runtime.current()
    runtime.flush_threshold = RECORD_ONLY_FLUSH_THRESHOLD
    engine = runtime.engine
    record = make()
    runtime.flush()
    engine.flush()
    seconds = []
    instructions = 0
    for _ in range(repeats):
        kept = record()
        engine.forget_structures()
        instructions = len(runtime._pending.instructions)
        runtime.flush()
        engine.flush()
        seconds.append(engine.last_stats.plan_seconds)
        del kept
    return instructions, engine.last_stats.block_ops, seconds


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    time.perf_counter = time.thread_time  # read at each call, here and in the engine
    print(f"Fresh planning on the program thread's CPU clock, median [min, max] of {args.repeats} flushes.")
    print("| loop | instructions | block ops | plan ms | µs per instruction |")
    print("|---|---:|---:|---:|---:|")
    for name, make in LOOPS.items():
        instructions, block_ops, seconds = fresh_plan(make, args.repeats)
        median = statistics.median(seconds)
        print(f"| {name} | {instructions} | {block_ops} | {median * 1e3:.1f} [{min(seconds) * 1e3:.1f}, {max(seconds) * 1e3:.1f}] | {median / instructions * 1e6:.1f} |")


if __name__ == "__main__":
    main()

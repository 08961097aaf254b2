"""Cost of one lazily recorded operation: recording it in the frontend, planning and running it in
the node engine, for a loop body seen for the first time and for one replayed from the plan cache.

Every array is lazy (eager threshold 0) and the flush threshold is raised so that the timed
recording loop never flushes; the flush of what it recorded is then timed on its own and split
with the engine's :class:`~shoal.engine.node.stats.BatchStats` into planning (``plan_seconds``:
computing the batch's structure key, building the block operations or taking them from the plan
cache) and running (the rest of ``NodeEngine.execute``, verification included: it is skipped for
a structure verified before). The same loop is recorded and flushed four times: the first batch
is planned from scratch (the engine forgets its plans and verified structures before it, in every
repetition), the next three have its structure and are replayed from the plan cache (the median
of the three is reported: the first may share the machine with kernels that the fresh batch has
the compile worker build). Finally the loop runs end to end at the default flush threshold,
against NumPy on the same arrays.

Small batches run instruction by instruction (``direct.py``: no planning at all); the
``planned`` rows set the engine's direct-work threshold to 0 so that every batch is planned into
block operations, which is what batches over large arrays get.

Recording is measured with small views of settled bases recorded like any other operation
(``SHOAL_SETTLED_THRESHOLD=0``); a second table gives the cost of each kind of operation on small
views of a settled lazy grid at default thresholds, where they are read and written in the
engine's memory and computed by NumPy at once (``shoal/numpy/_settled.py``), against NumPy.

``--clock thread`` times with the calling thread's CPU time (``time.thread_time``, also inside
the engine, for ``plan_seconds``) instead of the wall clock: recording and planning run on the
program's thread, so their figures hardly move when other processes load the machine; the run and
end-to-end columns then leave out the engine's worker threads and are not comparable.

Run: ``python -m benchmarks.per_op_cost [--iterations 500] [--sizes 1000,100000] [--repeats 5] [--clock thread]``
"""

from __future__ import annotations

import argparse
import os
import statistics
import time
from dataclasses import dataclass
from operator import setitem  # the subscript assignment itself, as `g[k] = v` runs it
from types import ModuleType

# Before shoal.numpy creates its runtime: every array lazy, no flush inside the recording loop.
os.environ["SHOAL_EAGER_THRESHOLD"] = "0"
os.environ["SHOAL_SETTLED_THRESHOLD"] = "0"
os.environ.setdefault("SHOAL_ENGINE", "node")
RECORD_ONLY_FLUSH_THRESHOLD = 10**9
OPS_PER_ITERATION = 6  # NumPy calls in the loop body: *, +=, sqrt, *, *, +
REPLAYS = 3  # batches of the same structure after the fresh one (the median is reported)

import numpy  # noqa: E402

import shoal.numpy  # noqa: E402
from shoal import runtime as shoal_runtime  # noqa: E402
from shoal import settings  # noqa: E402


def body(np: ModuleType, a, b, iterations: int):
    """``iterations`` times six element-wise operations (``OPS_PER_ITERATION``)."""
    for _ in range(iterations):
        c = a * b
        c += 1.0
        d = np.sqrt(c)
        a = 0.5 * a + 0.25 * d
    return a


@dataclass
class Flush:
    """One timed flush of a recorded batch."""

    instructions: int
    seconds: float
    plan_seconds: float
    direct: bool
    replayed: bool


def _flush(runtime: shoal_runtime.Runtime) -> Flush:
    instructions = len(runtime._pending.instructions)
    started = time.perf_counter()
    runtime.flush()
    seconds = time.perf_counter() - started
    stats = runtime.engine.last_stats
    return Flush(instructions, seconds, stats.plan_seconds, stats.direct, stats.replayed)


def recorded(size: int, iterations: int, direct_work: int | None) -> tuple[float, int, Flush, Flush]:
    """Record the loop 1 + ``REPLAYS`` times (fresh, then the same structure), flushing each
    separately; the replayed flush returned is the one of median time.

    Returns the recording seconds per user-level operation, the instructions recorded per
    iteration, and the two flushes.
    """
    runtime = shoal_runtime.current()
    runtime.flush_threshold = RECORD_ONLY_FLUSH_THRESHOLD
    engine = runtime.engine
    default_direct_work = engine.direct_work
    if direct_work is not None:
        engine.direct_work = direct_work
    a = shoal.numpy.linspace(0.0, 1.0, size) + 0.0  # computed by the engine: declared before the loop
    b = shoal.numpy.ones(size) * 1.0
    runtime.flush()
    forget = getattr(engine, "forget_structures", None)
    if forget is not None:
        forget()  # the first batch is planned (and verified) from scratch in every repetition
    flushes = []
    recording = []
    for _ in range(1 + REPLAYS):
        before = len(runtime._pending.instructions)
        started = time.perf_counter()
        a = body(shoal.numpy, a, b, iterations)
        recording.append(time.perf_counter() - started)
        per_iteration = round((len(runtime._pending.instructions) - before) / iterations)
        flushes.append(_flush(runtime))
    float(a[0])  # the result is read, as a program would
    engine.direct_work = default_direct_work
    replays = sorted(flushes[1:], key=lambda flush: flush.seconds)
    return min(recording) / (iterations * OPS_PER_ITERATION), per_iteration, flushes[0], replays[len(replays) // 2]


def end_to_end(np: ModuleType, size: int, iterations: int) -> float:
    """Seconds per operation of the loop run to a read result at default settings."""
    if np is shoal.numpy:
        shoal_runtime.current().flush_threshold = settings.FLUSH_THRESHOLD.default
    a = np.linspace(0.0, 1.0, size)
    b = np.ones(size)
    started = time.perf_counter()
    float(body(np, a, b, iterations)[0])
    return (time.perf_counter() - started) / (iterations * OPS_PER_ITERATION)


SETTLED_GRID = 1000  # a lazy grid at default thresholds (10^6 elements), rows of 998


def settled_costs(repeats: int, calls: int = 20000) -> list[tuple[str, float, float]]:
    """(operation, Shoal seconds, NumPy seconds) per call on small views of a settled grid."""
    runtime = shoal_runtime.current()
    saved = runtime.eager_threshold, runtime.settled_threshold
    runtime.eager_threshold, runtime.settled_threshold = settings.EAGER_THRESHOLD.default, settings.SETTLED_THRESHOLD.default
    try:
        lazy = shoal.numpy.ones((SETTLED_GRID, SETTLED_GRID))
        float(lazy[0, 0])  # settled: nothing recorded writes it
        plain = numpy.ones((SETTLED_GRID, SETTLED_GRID))
        vector = numpy.ones(SETTLED_GRID - 2)
        results = []
        for name, operation in (
            ("element read `g[i, j]`", lambda g: g[5, 7]),
            ("row view `g[i, 1:-1]`", lambda g: g[5, 1:-1]),
            ("`g[i, 1:-1] + g[i + 1, 1:-1]`", lambda g: g[5, 1:-1] + g[6, 1:-1]),
            ("`g[i, 1:-1] @ v` (v NumPy)", lambda g: g[5, 1:-1] @ vector),
            ("row write `g[i, 1:-1] = v`", lambda g: setitem(g, (5, slice(1, -1)), vector)),
            ("Gauss-Seidel row (11 calls)", lambda g: setitem(g, (5, slice(1, -1)), 0.2 * (g[4, 1:-1] + g[5, 1:-1] + g[6, 1:-1] + g[5, :-2] + g[5, 2:]))),
        ):
            timings = {}
            for label, grid in (("shoal", lazy), ("numpy", plain)):
                best = float("inf")
                for _ in range(repeats):
                    started = time.perf_counter()
                    for _ in range(calls):
                        operation(grid)
                    best = min(best, (time.perf_counter() - started) / calls)
                timings[label] = best
            results.append((name, timings["shoal"], timings["numpy"]))
        return results
    finally:
        runtime.eager_threshold, runtime.settled_threshold = saved


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.2f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=500, help="loop iterations per batch")
    parser.add_argument("--sizes", default="1000,100000", help="elements per array, comma-separated")
    parser.add_argument("--repeats", type=int, default=5, help="repetitions (medians are reported)")
    parser.add_argument("--clock", choices=("wall", "thread"), default="wall", help="wall clock, or the program thread's CPU time")
    args = parser.parse_args(argv)
    if args.clock == "thread":
        time.perf_counter = time.thread_time  # read at each call, here and in the engine
    ops = args.iterations * OPS_PER_ITERATION

    print(f"Loop of {args.iterations} iterations x {OPS_PER_ITERATION} operations, float64, "
          f"{args.repeats} repetitions, medians; microseconds per user-level operation ({args.clock} clock).")
    print("| elements | batches | record | instr./iter. | fresh: plan | fresh: run | replayed: plan | replayed: run "
          "| record + replayed plan | end to end Shoal (default settings) | end to end NumPy |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for size, direct_work in ((int(text), mode) for text in args.sizes.split(",") for mode in (None, 0)):
        samples: dict[str, list[float]] = {key: [] for key in ("record", "fp", "fr", "rp", "rr", "shoal", "numpy")}
        kinds = set()
        per_iteration = 0
        for _ in range(args.repeats):
            record, per_iteration, fresh, replay = recorded(size, args.iterations, direct_work)
            samples["record"].append(record)
            samples["fp"].append(fresh.plan_seconds / ops)
            samples["fr"].append((fresh.seconds - fresh.plan_seconds) / ops)
            samples["rp"].append(replay.plan_seconds / ops)
            samples["rr"].append((replay.seconds - replay.plan_seconds) / ops)
            kinds.add(("direct" if fresh.direct else "planned", "replayed" if replay.replayed else "not replayed"))
            samples["shoal"].append(end_to_end(shoal.numpy, size, args.iterations))
            samples["numpy"].append(end_to_end(numpy, size, args.iterations))
        m = {key: statistics.median(values) for key, values in samples.items()}
        kind = "; ".join(" / ".join(pair) for pair in sorted(kinds))
        print(f"| {size} | {kind} | {_us(m['record'])} | {per_iteration} | {_us(m['fp'])} | {_us(m['fr'])} | {_us(m['rp'])} "
              f"| {_us(m['rr'])} | {_us(m['record'] + m['rp'])} | {_us(m['shoal'])} | {_us(m['numpy'])} |")

    print()
    print(f"Small views of a settled {SETTLED_GRID} x {SETTLED_GRID} lazy grid (default thresholds), microseconds per call, best of {args.repeats}:")
    print("| operation | Shoal | NumPy | Shoal / NumPy |")
    print("|---|---:|---:|---:|")
    for name, shoal_seconds, numpy_seconds in settled_costs(args.repeats):
        print(f"| {name} | {_us(shoal_seconds)} | {_us(numpy_seconds)} | {shoal_seconds / numpy_seconds:.1f}x |")


if __name__ == "__main__":
    main()

"""The ready queue and the thread pool that runs block operations.

Ready operations (reference count zero) wait in a heap ordered by program position, so earlier
work runs first and releases free memory promptly. Worker threads run kernels (compiled ones
drop the GIL); the scheduling thread keeps the bookkeeping, runs cheap ``inline`` operations
itself and runs ``exclusive`` ones (work that brings its own threads) alone.

Any order of ready operations is a legal schedule. ``reverse=True`` runs the latest ready one
first: tests use it to show that no dependency is missing between operations that program order
alone happens to serialise.
"""

from __future__ import annotations

import heapq
import queue
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from shoal import trace
from shoal.engine.blocks.dependencies import BlockOp

# Operations handed to the workers at once, per thread: a worker that finishes one starts the
# next without waiting for the scheduling thread to wake up and hand it over (50-60 µs a block
# operation on a loaded 2-core host, see docs/decisions.md).
QUEUED_PER_THREAD = 2
# While the scheduling thread builds operations it holds the interpreter lock for milliseconds;
# a worker that needs it to start its next kernel would wait out the default 5 ms switch interval.
BUILDING_SWITCH_SECONDS = 0.0002


@dataclass
class RunStats:
    """What one run of the ready queue cost on the scheduling thread."""

    operations: int = 0
    bookkeeping_seconds: float = 0.0
    building_seconds: float = 0.0  # building operations while others ran
    wall_seconds: float = 0.0


class WorkerPool:
    """``threads`` workers fed from a task queue; they report back on a completion queue."""

    def __init__(self, threads: int, reverse: bool = False) -> None:
        if threads < 1:
            raise ValueError(f"a worker pool needs at least one thread, got {threads}")
        self.threads = threads
        self.reverse = reverse
        self._tasks: queue.SimpleQueue[BlockOp | None] = queue.SimpleQueue()
        self._done: queue.SimpleQueue[tuple[BlockOp, BaseException | None]] = queue.SimpleQueue()
        self._workers: list[threading.Thread] = []

    def _ensure_started(self) -> None:
        while len(self._workers) < self.threads:
            worker = threading.Thread(target=self._work, name=f"shoal-worker-{len(self._workers)}", daemon=True)
            worker.start()
            self._workers.append(worker)

    def _work(self) -> None:
        while True:
            op = self._tasks.get()
            if op is None:
                return
            tracer = trace.TRACER
            try:
                op.result = op.run() if tracer is None else tracer.timed(op.run, op.label or "block operation", "compute")
                self._done.put((op, None))
            except BaseException as error:  # reported to the scheduling thread, which re-raises
                self._done.put((op, error))

    def run(
        self,
        ops: list[BlockOp],
        prepare: Callable[[BlockOp], None],
        more: Callable[[], list[BlockOp] | None] | None = None,
        holds_back: Callable[[BlockOp], bool] | None = None,
    ) -> RunStats:
        """Run ``ops`` respecting their reference counts; re-raise the first failure.

        ``more`` builds further operations (inserted into the same dependency lists; None when
        there are no more). It is called whenever the scheduling thread would otherwise wait
        for a worker, so later parts of a batch are built while its first parts run. While
        operations are in flight, one for which ``holds_back`` is true waits for them (it would
        take new memory that their completion may free).
        """
        switch = sys.getswitchinterval()
        if more is not None and self.threads > 1:
            sys.setswitchinterval(min(switch, BUILDING_SWITCH_SECONDS))
        try:
            return self._run(ops, prepare, more, holds_back, lambda: sys.setswitchinterval(switch))
        finally:
            sys.setswitchinterval(switch)

    def _run(
        self,
        ops: list[BlockOp],
        prepare: Callable[[BlockOp], None],
        more: Callable[[], list[BlockOp] | None] | None,
        holds_back: Callable[[BlockOp], bool] | None,
        built_all: Callable[[], None],
    ) -> RunStats:
        stats = RunStats(operations=len(ops))
        start = clock = time.perf_counter()
        inline_seconds = waiting_seconds = building_seconds = 0.0
        sign = -1 if self.reverse else 1
        ready = [(sign * op.seq, op) for op in ops if op.refcount == 0]
        heapq.heapify(ready)
        inflight = 0
        finished = 0
        failure: BaseException | None = None
        parallel = self.threads > 1
        tracer = trace.TRACER
        while True:
            while ready and failure is None:
                op = ready[0][1]
                run_here = op.inline or op.exclusive or not parallel
                if run_here:
                    if op.exclusive and inflight:
                        break
                    heapq.heappop(ready)
                    prepare(op)
                    began = time.perf_counter()
                    try:
                        op.result = op.run()
                    except BaseException as error:
                        failure = error
                        break
                    finally:
                        ended = time.perf_counter()
                        inline_seconds += ended - began
                        if tracer is not None:
                            tracer.complete(op.label or "block operation", "compute", began, ended)
                    finished += 1
                    _release_dependents(op, ready, sign)
                    continue
                if inflight >= self.threads * QUEUED_PER_THREAD or (
                    inflight and holds_back is not None and holds_back(op)
                ):
                    break
                heapq.heappop(ready)
                prepare(op)
                self._ensure_started()
                self._tasks.put(op)
                inflight += 1
            if more is not None and failure is None and (inflight == 0 or self._done.empty()):
                began = time.perf_counter()
                try:
                    built = more()
                except BaseException as error:
                    failure = error
                    built = []
                ended = time.perf_counter()
                building_seconds += ended - began
                if tracer is not None:
                    tracer.complete("build block operations", "scheduling", began, ended)
                if built is None:
                    more = None
                    built_all()
                else:
                    stats.operations += len(built)
                    for op in built:
                        if op.refcount == 0:
                            heapq.heappush(ready, (sign * op.seq, op))
                continue
            if inflight == 0:
                if failure is not None or not ready:
                    break
                continue
            clock = time.perf_counter()
            op, error = self._done.get()
            ended = time.perf_counter()
            waiting_seconds += ended - clock
            if tracer is not None:
                tracer.complete("wait for workers", "wait", clock, ended)
            inflight -= 1
            if error is not None:
                failure = failure or error
            elif failure is None:
                finished += 1
                _release_dependents(op, ready, sign)
        stats.wall_seconds = time.perf_counter() - start
        stats.building_seconds = building_seconds
        stats.bookkeeping_seconds = max(0.0, stats.wall_seconds - waiting_seconds - inline_seconds - building_seconds)
        if failure is not None:
            raise failure
        if finished != stats.operations:
            raise RuntimeError(f"dependency cycle: {stats.operations - finished} block operations never became ready")
        return stats

    def close(self) -> None:
        for _ in self._workers:
            self._tasks.put(None)
        for worker in self._workers:
            worker.join(timeout=30)
        self._workers.clear()


def _release_dependents(op: BlockOp, ready: list[tuple[int, BlockOp]], sign: int) -> None:
    op.done = True
    for dependent in op.dependents:
        dependent.refcount -= 1
        if dependent.refcount == 0:
            heapq.heappush(ready, (sign * dependent.seq, dependent))

"""A thread pool as the scheduler loop's way to submit work, and its own poll source.

Worker threads run kernels (compiled ones drop the GIL) and report each finished operation on
a completion queue, which is the :class:`~shoal.engine.blocks.scheduler.PollSource` the loop
waits on; the loop's thread keeps the bookkeeping. The node engine runs every batch this way.
"""

from __future__ import annotations

import queue
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from shoal import trace
from shoal.engine.blocks.dependencies import BlockOp
from shoal.engine.blocks.scheduler import Completion, RunStats, run_ready

# Operations handed to the workers at once, per thread: a worker that finishes one starts the
# next without waiting for the scheduling thread to wake up and hand it over (50-60 µs a block
# operation on a loaded 2-core host, see docs/decisions.md).
QUEUED_PER_THREAD = 2
# While the scheduling thread builds operations it holds the interpreter lock for milliseconds;
# a worker that needs it to start its next kernel would wait out the default 5 ms switch interval.
BUILDING_SWITCH_SECONDS = 0.0002


class WorkerPool:
    """``threads`` workers fed from a task queue; they report back on a completion queue."""

    def __init__(self, threads: int, reverse: bool = False) -> None:
        if threads < 1:
            raise ValueError(f"a worker pool needs at least one thread, got {threads}")
        self.threads = threads
        self.reverse = reverse
        self._tasks: queue.SimpleQueue[BlockOp | None] = queue.SimpleQueue()
        self._done: queue.SimpleQueue[Completion] = queue.SimpleQueue()
        self._workers: list[threading.Thread] = []

    def submit(self, op: BlockOp) -> None:
        """Queue ``op`` for the next free worker (starting the workers on first use)."""
        while len(self._workers) < self.threads:
            worker = threading.Thread(target=self._work, name=f"shoal-worker-{len(self._workers)}", daemon=True)
            worker.start()
            self._workers.append(worker)
        self._tasks.put(op)

    def poll(self, timeout: float | None) -> list[Completion]:
        """Operations the workers have finished (see :class:`~shoal.engine.blocks.scheduler.PollSource`)."""
        done = self._done
        if timeout is None or timeout > 0:
            try:
                first = done.get(timeout=timeout)
            except queue.Empty:
                return []
            completions = [first]
        else:
            completions = []
        while not done.empty():
            completions.append(done.get_nowait())
        return completions

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
        on_failure: Callable[[BlockOp, BaseException], None] | None = None,
    ) -> RunStats:
        """Run ``ops`` (and what ``more`` builds) on the workers with the one scheduler loop.

        See :func:`~shoal.engine.blocks.scheduler.run_ready` for ``prepare``, ``more``,
        ``holds_back`` and ``on_failure``. With one thread every operation runs on the calling thread.
        After a failure every operation that does not depend on the failed one still runs (the
        program may catch the error and go on with their results).
        """
        switch = sys.getswitchinterval()
        if more is not None and self.threads > 1:
            sys.setswitchinterval(min(switch, BUILDING_SWITCH_SECONDS))
            more = _restoring_when_built(more, switch)
        try:
            return run_ready(
                ops,
                self.submit,
                self,
                capacity=self.threads * QUEUED_PER_THREAD,
                prepare=prepare,
                more=more,
                holds_back=holds_back,
                reverse=self.reverse,
                serial=self.threads == 1,
                on_failure=on_failure,
                finish_others=True,
            )
        finally:
            sys.setswitchinterval(switch)

    def each(self, calls: Sequence[Callable[[], Any]]) -> list[BaseException | None]:
        """Run ``calls`` at once, the first on the calling thread and the others on the workers
        (no scheduler loop may be running), and return each one's error (None: it returned)."""
        ops = [BlockOp(seq, call, (), ()) for seq, call in enumerate(calls)]
        for op in ops[1:]:
            self.submit(op)
        errors: list[BaseException | None] = [None] * len(ops)
        if ops:
            try:
                ops[0].run()
            except BaseException as error:  # the others still finish before anything is reported
                errors[0] = error
        waiting = len(ops) - 1
        while waiting:
            for op, error in self.poll(None):
                errors[op.seq] = error
                waiting -= 1
        return errors

    def close(self) -> None:
        """Stop and join the workers (a later :meth:`run` starts new ones)."""
        for _ in self._workers:
            self._tasks.put(None)
        for worker in self._workers:
            worker.join(timeout=30)
        self._workers.clear()


def _restoring_when_built(
    more: Callable[[], list[BlockOp] | None], switch: float
) -> Callable[[], list[BlockOp] | None]:
    """``more`` that puts the interpreter's switch interval back once everything is built."""

    def build() -> list[BlockOp] | None:
        built = more()
        if built is None:
            sys.setswitchinterval(switch)
        return built

    return build

"""The one scheduler loop: run block operations as their reference counts reach zero.

Ready operations (reference count zero) wait in a heap ordered by program position, so earlier
work runs first and releases free memory promptly. The loop does not know *how* work runs; it
is given two things (STYLE.md item 7, after dask's ``get_async(submit, ...)``):

* ``submit(op)`` hands an operation to whatever runs it: a thread pool on one node
  (:mod:`shoal.engine.blocks.thread_pool`), a non-blocking MPI send or receive or a remote
  node's engine in a cluster manager. It must not block on the operation's completion.
* a :class:`PollSource` reports finished operations: ``poll(0)`` returns those finished so far
  without waiting, ``poll(None)`` waits until at least one has finished. Whatever finishes
  outside this process (a completed transfer, work done on another rank) is reported here as
  the completion of the operation that stands for it.

Operations marked ``inline`` (cheap bookkeeping) run on the loop's own thread as soon as they
are ready; ``exclusive`` ones (work that brings its own threads) run there too, but only while
nothing is in flight. The loop waits on the poll source only when nothing can run: no ready
operation may be started and there is nothing left to build.

Any order of ready operations is a legal schedule. ``reverse=True`` runs the latest ready one
first: tests use it to show that no dependency is missing between operations that program order
alone happens to serialise.
"""

from __future__ import annotations

import heapq
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from shoal import trace
from shoal.engine.blocks.dependencies import BlockOp
from shoal.errors import WorkAbandoned

Completion = tuple[BlockOp, "BaseException | None"]
"""A finished operation and the error it raised (None when it succeeded)."""

#: Set by a second Ctrl-C (``shoal.interrupts``): every loop starts nothing more, waits for what
#: is in flight and raises :class:`~shoal.errors.WorkAbandoned`.
ABANDON = threading.Event()


class PollSource(Protocol):
    """Where the loop learns that submitted operations have finished."""

    def poll(self, timeout: float | None) -> Sequence[Completion]:
        """Finished operations: at once when ``timeout`` is 0, else wait for at least one
        (``None``: as long as it takes; a number: at most that many seconds, possibly none)."""
        ...


@dataclass
class RunStats:
    """What one run of the loop cost on its own thread."""

    operations: int = 0
    bookkeeping_seconds: float = 0.0
    building_seconds: float = 0.0  # building operations while others ran
    wall_seconds: float = 0.0


def run_ready(
    ops: list[BlockOp],
    submit: Callable[[BlockOp], None],
    poll: PollSource,
    *,
    capacity: int,
    prepare: Callable[[BlockOp], None] | None = None,
    more: Callable[[], list[BlockOp] | None] | None = None,
    holds_back: Callable[[BlockOp], bool] | None = None,
    reverse: bool = False,
    serial: bool = False,
    on_failure: Callable[[BlockOp, BaseException], None] | None = None,
    finish_others: bool = False,
) -> RunStats:
    """Run ``ops`` (and those ``more`` builds) respecting their reference counts.

    ``capacity`` bounds the operations submitted and not yet reported finished; ``prepare`` is
    called on each operation just before it runs or is submitted; ``more`` builds further
    operations (inserted into the same dependency lists; None when there are no more) and is
    called whenever the loop would otherwise wait, so later parts of a batch are built while
    its first parts run. While operations are in flight, one for which ``holds_back`` is true
    waits for them (it would take memory that their completion may free). ``serial`` runs every
    operation on the loop's thread (``submit`` and ``poll`` are then never used).

    The first failure is re-raised once nothing is in flight any more, after ``on_failure`` was
    called with the operation that raised it (to name what failed in the caller's terms); an
    operation that never becomes ready (a cycle) raises :class:`RuntimeError`. After a failure
    the loop starts nothing more, unless ``finish_others``: then every operation that does not
    depend on a failed one still runs (a program that catches the error goes on with the arrays
    of the other operations), and the failure raised is the earliest in program order. An
    interrupt (an exception that is not an :class:`Exception`) or a failure to build more
    operations always stops the loop, and so does :data:`ABANDON` once set: what is in flight
    finishes, then :class:`~shoal.errors.WorkAbandoned` is raised.
    """
    stats = RunStats(operations=len(ops))
    start = time.perf_counter()
    inline_seconds = waiting_seconds = building_seconds = 0.0
    sign = -1 if reverse else 1
    ready = [(sign * op.seq, op) for op in ops if op.refcount == 0]
    heapq.heapify(ready)
    inflight = 0
    finished = 0
    failure: BaseException | None = None
    failed: BlockOp | None = None
    stopped = False  # nothing more is started: a failure (unless ``finish_others``) or an interrupt
    tracer = trace.TRACER
    while True:
        if not stopped and ABANDON.is_set():
            failure, failed, stopped = WorkAbandoned(), None, True
        while ready and not stopped:
            op = ready[0][1]
            if op.inline or op.exclusive or serial:
                if op.exclusive and inflight:
                    break
                heapq.heappop(ready)
                if prepare is not None:
                    prepare(op)
                began = time.perf_counter()
                try:
                    op.result = op.run()
                except BaseException as error:
                    failure, failed = _earliest(failure, failed, error, op)
                    stopped = _stops(error, finish_others)
                    continue
                finally:
                    ended = time.perf_counter()
                    inline_seconds += ended - began
                    if tracer is not None:
                        tracer.complete(op.label or "block operation", "compute", began, ended)
                finished += 1
                release_dependents(op, ready, sign)
                continue
            if inflight >= capacity or (inflight and holds_back is not None and holds_back(op)):
                break
            heapq.heappop(ready)
            if prepare is not None:
                prepare(op)
            submit(op)
            inflight += 1
        if more is not None and not stopped:
            if inflight:
                completions = poll.poll(0)
                if completions:
                    inflight -= len(completions)
                    done, failure, failed = _absorb(completions, ready, sign, failure, failed, finish_others)
                    finished += done
                    stopped = _stops(failure, finish_others)
                    continue
            began = time.perf_counter()
            try:
                built = more()
            except BaseException as error:
                failure, failed, stopped = error, None, True
                built = []
            ended = time.perf_counter()
            building_seconds += ended - began
            if tracer is not None:
                tracer.complete("build block operations", "scheduling", began, ended)
            if built is None:
                more = None
            else:
                stats.operations += len(built)
                for op in built:
                    if op.refcount == 0:
                        heapq.heappush(ready, (sign * op.seq, op))
            continue
        if inflight == 0:
            if stopped or not ready:
                break
            continue
        clock = time.perf_counter()
        completions = poll.poll(None)
        ended = time.perf_counter()
        waiting_seconds += ended - clock
        if tracer is not None:
            tracer.complete("wait for workers", "wait", clock, ended)
        inflight -= len(completions)
        done, failure, failed = _absorb(completions, ready, sign, failure, failed, finish_others)
        finished += done
        stopped = stopped or _stops(failure, finish_others)
    stats.wall_seconds = time.perf_counter() - start
    stats.building_seconds = building_seconds
    stats.bookkeeping_seconds = max(0.0, stats.wall_seconds - waiting_seconds - inline_seconds - building_seconds)
    if failure is not None:
        if failed is not None and on_failure is not None:
            on_failure(failed, failure)
        raise failure
    if finished != stats.operations:
        raise RuntimeError(f"dependency cycle: {stats.operations - finished} block operations never became ready")
    return stats


def _absorb(
    completions: Sequence[Completion],
    ready: list[tuple[int, BlockOp]],
    sign: int,
    failure: BaseException | None,
    failed: BlockOp | None,
    finish_others: bool = False,
) -> tuple[int, BaseException | None, BlockOp | None]:
    """Take finished operations in: release their dependents until one has failed (with
    ``finish_others``, the dependents of every operation that did not fail). Returns how many
    finished cleanly and were taken in, and the failure to raise with its operation."""
    finished = 0
    for op, error in completions:
        if error is not None:
            failure, failed = _earliest(failure, failed, error, op)
        elif failure is None or finish_others:
            finished += 1
            release_dependents(op, ready, sign)
    return finished, failure, failed


def _stops(failure: BaseException | None, finish_others: bool) -> bool:
    """True if ``failure`` ends the loop: any failure, unless ``finish_others`` and it is an
    :class:`Exception` (an interrupt always does)."""
    return failure is not None and not (finish_others and isinstance(failure, Exception))


def _earliest(
    failure: BaseException | None, failed: BlockOp | None, error: BaseException, op: BlockOp
) -> tuple[BaseException, BlockOp | None]:
    """Of the failure kept so far and ``op``'s ``error``, the one to raise: the first seen,
    unless ``op`` comes earlier in program order (NumPy would have raised that one first)."""
    if failure is None or (failed is not None and op.seq < failed.seq and isinstance(failure, Exception)):
        return error, op
    return failure, failed


def release_dependents(op: BlockOp, ready: list[tuple[int, BlockOp]], sign: int) -> None:
    """Mark ``op`` done and push the dependents whose last predecessor it was onto ``ready``."""
    op.done = True
    for dependent in op.dependents:
        dependent.refcount -= 1
        if dependent.refcount == 0:
            heapq.heappush(ready, (sign * dependent.seq, dependent))

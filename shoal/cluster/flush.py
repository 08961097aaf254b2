"""Running one rank's operations: the flush algorithm of paper 003 §5.7, and a blocking mode.

With latency hiding, every receive is posted before anything else, and then the rank loops:

1. start every send that is ready (its data no longer waits on an earlier operation);
2. run the computations that are ready, testing for finished receives between them;
3. wait only when nothing can start or run: for any one receive to finish.

An operation is ready when it touches no memory that an earlier, not yet started operation
writes (or reads, if it writes): the per-base dependency lists of paper 003, kept here as the
accesses of the operations skipped so far in a pass. A computation also needs the receives whose
data it reads. Computations go to the node engine in program order among themselves whenever
they share memory, so the node engine's own order keeps them right.

In blocking mode (``SHOAL_LATENCY_HIDING=off``) each operation runs in program order and each
send and receive is waited for where it stands. Every rank plans its sends and receives in the
same global order (the message tags' order), so this too finishes.

Time spent inside MPI waits is counted per rank (:class:`CommStats`) and traced as ``wait``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np

from shoal import trace
from shoal.bytecode import BaseDecl, Batch, Instruction, make_attrs
from shoal.cluster.plan import Access, Op
from shoal.engine.component import Component

TEST_EVERY = 4  # computations between two tests for finished receives
MAX_INTERVALS = 16  # blocked byte ranges kept per base before they merge into one


@dataclass
class CommStats:
    """One rank's communication totals."""

    messages_sent: int = 0
    messages_received: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    wait_seconds: float = 0.0
    communication_seconds: float = 0.0
    busy_seconds: float = 0.0  # in the flush, waiting included

    def as_list(self) -> list[float]:
        return [
            self.messages_sent,
            self.messages_received,
            self.bytes_sent,
            self.bytes_received,
            self.wait_seconds,
            self.communication_seconds,
            self.busy_seconds,
        ]


class _Blocked:
    """Byte ranges, per local base, that operations skipped in this pass read and write."""

    def __init__(self) -> None:
        self.reads: dict[int, list[tuple[int, int]]] = {}
        self.writes: dict[int, list[tuple[int, int]]] = {}

    @staticmethod
    def _hits(table: dict[int, list[tuple[int, int]]], accesses: list[Access]) -> bool:
        for base, low, high in accesses:
            for other_low, other_high in table.get(base, ()):
                if low < other_high and other_low < high:
                    return True
        return False

    def conflicts(self, op: Op) -> bool:
        return self._hits(self.writes, op.reads) or self._hits(self.writes, op.writes) or self._hits(self.reads, op.writes)

    @staticmethod
    def _add(table: dict[int, list[tuple[int, int]]], accesses: list[Access]) -> None:
        for base, low, high in accesses:
            ranges = table.setdefault(base, [])
            ranges.append((low, high))
            if len(ranges) > MAX_INTERVALS:
                table[base] = [(min(r[0] for r in ranges), max(r[1] for r in ranges))]

    def add(self, op: Op) -> None:
        self._add(self.reads, op.reads)
        self._add(self.writes, op.writes)


class Flusher:
    """Runs operations on ``inner`` and moves their messages over ``comm``."""

    def __init__(self, inner: Component, comm: object, rank: int, latency_hiding: bool) -> None:
        self.inner = inner
        self.comm = comm
        self.rank = rank
        self.latency_hiding = latency_hiding
        self.stats = CommStats()
        self._batch = Batch()
        self._sends: list[tuple[object, np.ndarray]] = []

    # ------------------------------------------------------------------ pieces

    def _compute(self, op: Op) -> None:
        batch = self._batch
        batch.bases.extend(op.declares)
        for base, data in op.data.items():
            batch.data[base] = data
            batch.donated.add(base)
        for need in op.needs:
            assert need.buffer is not None and need.dtype is not None
            batch.bases.append(BaseDecl(need.temp, need.dtype, need.buffer.size))
            batch.data[need.temp] = need.buffer.reshape(-1)
            batch.donated.add(need.temp)
        batch.instructions.extend(op.instructions)
        for need in op.needs:
            batch.instructions.append(Instruction("release", (), (), make_attrs(base=need.temp)))
            need.buffer = None
        op.issued = op.done = True

    def submit(self) -> None:
        """Hand the computations gathered so far to the node engine."""
        batch, self._batch = self._batch, Batch()
        if not batch.is_empty():
            self.inner.execute(batch)

    def _send(self, op: Op) -> None:
        from mpi4py import MPI

        assert op.view is not None
        self.submit()
        began = time.perf_counter()
        data = np.ascontiguousarray(self.inner.fetch(op.view)).reshape(-1)
        request = self.comm.Isend([data.view(np.uint8), MPI.BYTE], dest=op.peer, tag=op.tag)
        ended = time.perf_counter()
        self.stats.communication_seconds += ended - began
        self.stats.messages_sent += 1
        self.stats.bytes_sent += data.nbytes
        tracer = trace.TRACER
        if tracer is not None:
            tracer.complete("send", "communication", began, ended, {"to": op.peer, "bytes": int(data.nbytes)})
        self._sends.append((request, data))
        op.issued = op.done = True
        if not self.latency_hiding:
            self._wait_for([request], "wait for send")

    def _post(self, op: Op) -> None:
        from mpi4py import MPI

        assert op.dtype is not None
        buffer = np.empty(op.shape, dtype=op.dtype)
        op.buffer = buffer
        op.request = self.comm.Irecv([buffer.reshape(-1).view(np.uint8), MPI.BYTE], source=op.peer, tag=op.tag)
        op.issued = True

    def _finished(self, op: Op, status: object) -> None:
        from mpi4py import MPI

        assert op.buffer is not None
        count = status.Get_count(MPI.BYTE)  # type: ignore[attr-defined]
        if count != op.buffer.nbytes:
            raise RuntimeError(f"rank {self.rank}: a message from rank {op.peer} (tag {op.tag}) has {count} bytes, not the {op.buffer.nbytes} planned")
        op.done = True
        op.request = None
        self.stats.messages_received += 1
        self.stats.bytes_received += op.buffer.nbytes

    def _wait_for(self, requests: list, what: str) -> None:
        from mpi4py import MPI

        began = time.perf_counter()
        MPI.Request.Waitall(requests)
        self._waited(began, what)

    def _waited(self, began: float, what: str) -> None:
        ended = time.perf_counter()
        self.stats.wait_seconds += ended - began
        tracer = trace.TRACER
        if tracer is not None:
            tracer.complete(what, "wait", began, ended)

    # ------------------------------------------------------------------ the flush

    def run(self, ops: list[Op]) -> None:
        """Run ``ops`` (this rank's operations for one batch, in program order) to the end."""
        began = time.perf_counter()
        try:
            if self.latency_hiding:
                self._hide_latency(ops)
            else:
                self._in_order(ops)
            self.submit()
            requests = [request for request, _ in self._sends]
            self._sends = []
            if requests:
                self._wait_for(requests, "wait for sends")
        finally:
            self.stats.busy_seconds += time.perf_counter() - began

    def _in_order(self, ops: list[Op]) -> None:
        from mpi4py import MPI

        for op in ops:
            if op.kind == "compute":
                self._compute(op)
            elif op.kind == "send":
                self._send(op)
            else:
                self._post(op)
                status = MPI.Status()
                started = time.perf_counter()
                op.request.Wait(status)  # type: ignore[attr-defined]
                self._waited(started, "wait for receive")
                self._finished(op, status)

    def _hide_latency(self, ops: list[Op]) -> None:
        receives = [op for op in ops if op.kind == "receive"]
        for op in receives:
            self._post(op)
        pending = [op for op in ops if op.kind != "receive"]
        outstanding = list(receives)
        while pending:
            self._start_sends(pending)
            pending, progressed = self._compute_ready(pending, outstanding)
            self.submit()
            waiting = len(outstanding)
            outstanding = self._test(outstanding)
            progressed = progressed or len(outstanding) < waiting
            if pending and not progressed:
                if not outstanding:
                    raise RuntimeError(f"rank {self.rank}: no operation can run and no message is awaited ({len(pending)} left)")
                outstanding = self._wait_any(outstanding)

    def _start_sends(self, pending: list[Op]) -> None:
        """Step 1: every send whose data is ready goes out before any computation."""
        blocked = _Blocked()
        for op in pending:
            if op.kind == "send" and not blocked.conflicts(op):
                self._send(op)
            elif not op.issued:
                blocked.add(op)

    def _compute_ready(self, pending: list[Op], outstanding: list[Op]) -> tuple[list[Op], bool]:
        """Step 2: run what is ready in program order, testing receives now and then."""
        blocked = _Blocked()
        left: list[Op] = []
        progressed = False
        since_test = 0
        for op in pending:
            if op.issued:
                progressed = True
                continue
            if blocked.conflicts(op) or any(not need.done for need in op.needs):
                blocked.add(op)
                left.append(op)
                continue
            if op.kind == "send":
                self._send(op)
            else:
                self._compute(op)
                since_test += 1
                if since_test >= TEST_EVERY and outstanding:
                    self.submit()
                    outstanding[:] = self._test(outstanding)
                    since_test = 0
            progressed = True
        return left, progressed

    def _test(self, outstanding: list[Op]) -> list[Op]:
        from mpi4py import MPI

        if not outstanding:
            return outstanding
        statuses = [MPI.Status() for _ in outstanding]
        indices = MPI.Request.Testsome([op.request for op in outstanding], statuses)
        if not indices:
            return outstanding
        for position, index in enumerate(indices):  # statuses come in the order of the indices
            self._finished(outstanding[index], statuses[position])
        return [op for op in outstanding if not op.done]

    def _wait_any(self, outstanding: list[Op]) -> list[Op]:
        """Step 3: nothing can run; wait for some receives to finish."""
        from mpi4py import MPI

        statuses = [MPI.Status() for _ in outstanding]
        began = time.perf_counter()
        indices = MPI.Request.Waitsome([op.request for op in outstanding], statuses)
        self._waited(began, "wait for receive")
        for position, index in enumerate(indices or ()):
            self._finished(outstanding[index], statuses[position])
        return [op for op in outstanding if not op.done]

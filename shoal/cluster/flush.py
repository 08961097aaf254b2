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

import collections
import time
from dataclasses import dataclass

import numpy as np

from shoal import trace
from shoal.bytecode import BaseDecl, Batch, Instruction, make_attrs
from shoal.cluster.dependencies import link
from shoal.cluster.plan import Op
from shoal.engine.component import Component

TEST_EVERY = 4  # computations between two tests for finished receives


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
        link(ops)
        outstanding = [op for op in ops if op.kind == "receive"]
        for op in outstanding:
            self._post(op)  # a receive writes a new temporary base: it waits for nothing
        sends: collections.deque[Op] = collections.deque()
        computes: collections.deque[Op] = collections.deque()
        for op in ops:
            if op.kind != "receive" and op.waits_for == 0:
                (sends if op.kind == "send" else computes).append(op)
        left = sum(1 for op in ops if op.kind != "receive")

        def finish(op: Op) -> None:
            for dependent in op.dependents:
                dependent.waits_for -= 1
                if dependent.waits_for == 0:
                    (sends if dependent.kind == "send" else computes).append(dependent)

        while left:
            while sends:  # 1. start every ready send
                op = sends.popleft()
                self._send(op)
                finish(op)
                left -= 1
            if computes:  # 2. compute a few, then look for finished receives
                for _ in range(min(TEST_EVERY, len(computes))):
                    op = computes.popleft()
                    self._compute(op)
                    finish(op)
                    left -= 1
                if outstanding:
                    self.submit()
                    for op in self._test(outstanding):
                        finish(op)
                    outstanding = [op for op in outstanding if not op.done]
                continue
            if not left:
                break
            if not outstanding:
                raise RuntimeError(f"rank {self.rank}: no operation can run and no message is awaited ({left} left)")
            self.submit()  # 3. nothing can run: wait for a receive
            for op in self._wait_any(outstanding):
                finish(op)
            outstanding = [op for op in outstanding if not op.done]
        for op in outstanding:  # receives nothing reads (none are planned so): still complete them
            self._wait_for([op.request], "wait for receive")

    def _test(self, outstanding: list[Op]) -> list[Op]:
        """The receives among ``outstanding`` that have finished (marked done)."""
        from mpi4py import MPI

        statuses = [MPI.Status() for _ in outstanding]
        indices = MPI.Request.Testsome([op.request for op in outstanding], statuses)
        finished = []
        for position, index in enumerate(indices or ()):  # statuses come in the order of the indices
            self._finished(outstanding[index], statuses[position])
            finished.append(outstanding[index])
        return finished

    def _wait_any(self, outstanding: list[Op]) -> list[Op]:
        """Step 3: nothing can run; wait until some receives finish, and return them."""
        from mpi4py import MPI

        statuses = [MPI.Status() for _ in outstanding]
        began = time.perf_counter()
        indices = MPI.Request.Waitsome([op.request for op in outstanding], statuses)
        self._waited(began, "wait for receive")
        finished = []
        for position, index in enumerate(indices or ()):
            self._finished(outstanding[index], statuses[position])
            finished.append(outstanding[index])
        return finished

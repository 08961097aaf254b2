"""Running one rank's operations on the shared block layer: the flush of paper 003 §5.7.

Each planned operation becomes a :class:`~shoal.engine.blocks.BlockOp` in the shared
:class:`~shoal.engine.blocks.DependencyLists` (keys: this rank's local base and a block of its
bytes; a temporary base is one block), and :func:`~shoal.engine.blocks.run_ready` runs them:

- a receive is submitted: an ``Irecv`` is posted; it finishes when the poll source sees it done;
- a send runs on the loop's thread: it reads its data from the node engine and posts an
  ``Isend``;
- a computation runs on the loop's thread by joining the rank's next node-engine batch: the node
  engine keeps program order, so its dependents may join the same batch at once.

With latency hiding the priorities (the loop runs the ready operation with the lowest ``seq``
first) are receives, then sends, then computations, each class in program order: all
communication that can start starts before any computation. A reduction's partial results
(``late`` sends) come after the computations, which would otherwise leave the node-engine batch
they read from at each of them: the heat example's ``center[:] = work`` after its ``np.sum``
then ran as a batch of its own instead of in the sweep's fused kernel. When nothing more is
ready, the loop polls: the gathered batch goes to the node engine (while the messages are in
flight), the receives are tested, and only if no computation was pending does the rank wait
(``Waitsome``). A send first hands the gathered batch over if its data comes from it; one that is
not done once posted is tested from a thread while the node engine runs (:class:`SendProgress`).
In blocking mode (``SHOAL_LATENCY_HIDING=off``) the loop runs serially in program order and each
send and receive is waited for where it stands; every rank plans its messages in the same global
order, so this finishes too.

Time spent inside MPI waits is counted per rank (:class:`CommStats`) and traced as ``wait``.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from shoal import trace
from shoal.bytecode import BaseDecl, Batch
from shoal.cluster import waiting
from shoal.cluster.ops import release_of
from shoal.cluster.plan import Access, Op
from shoal.cluster.plan_cache import Template
from shoal.engine.blocks import BlockOp, Completion, DependencyLists, run_ready
from shoal.engine.component import Component

ACCESS_KEYS_KEPT = 1 << 16  # accesses whose dependency keys a rank remembers (a loop's repeat)
PROGRESS_MIN_WORK = 1 << 21  # elements a node-engine batch writes before its sends are tested from a thread


@dataclass
class CommStats:
    """One rank's communication totals."""

    messages_sent: int = 0
    messages_received: int = 0
    bytes_sent: int = 0
    bytes_received: int = 0
    wait_seconds: float = 0.0
    communication_seconds: float = 0.0
    busy_seconds: float = 0.0  # in flushes, waiting included
    batches: int = 0  # cluster batches run
    replayed: int = 0  # of which the plan came from the plan cache (or parts of them: ``parts``)
    parts: int = 0  # loop iterations of long batches planned one by one (shoal.cluster.segments)
    by_number: int = 0  # of which rank 0 sent the plan's number instead of the batch
    repeated: int = 0  # instructions rank 0 sent as repeats of an earlier loop iteration (shoal.cluster.alike)
    parts_drawn: int = 0  # parts of random draws sent (rank 0) or drawn here (others) as recipes
    reads: int = 0  # views assembled at rank 0 that this rank took part in
    receive_seconds: float = 0.0  # other ranks: receiving, decoding and verifying rank 0's batches
    plan_seconds: float = 0.0  # planning (or finding a cached plan)
    engine_seconds: float = 0.0  # inside the node engine (execute and fetch)


class Flusher:
    """Runs operations on ``inner`` and moves their messages over ``comm``.

    ``block_bytes`` maps a local base to the bytes per dependency block (bases it lacks, the
    temporary ones, are one block)."""

    def __init__(self, inner: Component, comm: object, rank: int, latency_hiding: bool, block_bytes: dict[int, int], yielding: bool = False) -> None:
        self.inner = inner
        self.yielding = yielding  # waits give the processor up (shoal.cluster.waiting)
        self.comm = comm
        self.rank = rank
        self.latency_hiding = latency_hiding
        self.block_bytes = block_bytes
        self.stats = CommStats()
        self.failure: BaseException | None = None  # the first failed computation of this batch
        self._batch = Batch()
        self._repeats: list[int] = []  # per instruction of the gathered batch, the one it repeats (-1: none)
        self._models: dict[int, tuple[int, int]] = {}  # a template operation -> where its first replay stands in the gathered batch
        self._sends: list[tuple[object, np.ndarray]] = []
        self._unfinished: list = []  # sends found not done after they were posted
        self._receiving: list[BlockOp] = []
        self._plan: dict[int, Op] = {}
        self._access_keys: dict[tuple[Access, int | None], tuple[tuple[int, int], ...]] = {}  # the blocks of an access, by its block size
        self._block_of: dict[int, BlockOp] = {}  # id of an op of the batch -> its block operation
        self._feeding: set[int] = set()  # ids of the block operations that read what the gathered batch writes
        self.graphs_reused = 0  # batches whose dependency graph came with their plan
        self._progress = SendProgress() if latency_hiding and comm is not None else None

    # ------------------------------------------------------------------ dependency keys

    def _keys(self, accesses: list[Access]) -> tuple[tuple[int, int], ...]:
        keys: list[tuple[int, int]] = []
        known = self._access_keys
        for access in accesses:
            base, low, high = access
            size = self.block_bytes.get(base)
            found = known.get((access, size))
            if found is None:
                if size is None:
                    found = ((base, 0),)
                else:
                    found = tuple((base, block) for block in range(low // size, max(low, high - 1) // size + 1))
                if len(known) >= ACCESS_KEYS_KEPT:
                    known.clear()
                known[(access, size)] = found
            keys.extend(found)
        return tuple(dict.fromkeys(keys))

    # ------------------------------------------------------------------ operations

    def _add_compute(self, op: Op) -> None:
        """Gather ``op`` into the next node-engine batch (the dependents of its block operation
        then wait for that batch)."""
        block = self._block_of.get(id(op))
        if block is not None:
            self._feeding.update(map(id, block.dependents))
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
        start = len(batch.instructions)
        count = len(op.instructions)
        batch.instructions.extend(op.instructions)
        model = op.model
        first = None if model is None else self._models.setdefault(id(model), (start, count))
        if first is not None and first[0] != start and first[1] == count:
            self._repeats.extend(range(first[0], first[0] + count))
        else:
            self._repeats.extend([-1] * count)
        for need in op.needs:
            batch.instructions.append(release_of(need.temp))
            self._repeats.append(-1)
            need.buffer = None

    def reads_gathered(self, op: Op) -> bool:
        """True if ``op`` reads what a computation gathered into the next node-engine batch
        writes (or if that is not known: ``op`` is of no block)."""
        block = self._block_of.get(id(op))
        return block is None or id(block) in self._feeding

    def submit_batch(self) -> None:
        """Hand the computations gathered so far to the node engine, after a failure too: the
        computations recorded before the failed one may come later in this rank's order (one
        waiting for a message), and the program that catches the error goes on with their
        arrays. What reads the failed instruction's output is no array the program holds (its
        call raised), and every rank's messages are sent as planned."""
        batch, self._batch = self._batch, Batch()
        repeats, self._repeats = self._repeats, []
        self._models.clear()
        self._feeding.clear()
        if batch.is_empty():
            return
        if any(position >= 0 for position in repeats):  # a loop's iterations gathered in one batch: each verified once
            batch.repeats = repeats
        began = time.perf_counter()
        progress = None
        if self._progress is not None:
            self._unfinished = [request for request in self._unfinished if request]
            if self._unfinished and _work(batch) >= PROGRESS_MIN_WORK:
                progress = self._progress
                progress.begin(self._unfinished)
        try:
            self.inner.execute(batch)
        except Exception as error:
            self.failure = self.failure or error
        finally:
            if progress is not None:
                progress.end()
        self.stats.engine_seconds += time.perf_counter() - began

    def _send(self, op: Op) -> None:
        """Send ``op``'s data; the gathered batch runs first if it computes some of that data
        (always for an operation of no block)."""
        from mpi4py import MPI

        assert op.view is not None
        if self.reads_gathered(op):
            self.submit_batch()
        began = time.perf_counter()
        try:
            data = np.require(self.inner.fetch(op.view), requirements="C").reshape(-1)
        except Exception as error:  # the peer still gets its message, of the planned size
            self.failure = self.failure or error
            data = np.zeros(op.view.size, dtype=op.view.dtype)
        fetched = time.perf_counter()
        self.stats.engine_seconds += fetched - began
        request = self.comm.Isend([data.view(np.uint8), MPI.BYTE], dest=op.peer, tag=op.tag)  # type: ignore[attr-defined]
        ended = time.perf_counter()
        self.stats.communication_seconds += ended - fetched
        self.stats.messages_sent += 1
        self.stats.bytes_sent += data.nbytes
        tracer = trace.TRACER
        if tracer is not None:
            tracer.complete("send", "communication", began, ended, {"to": op.peer, "bytes": int(data.nbytes)})
        if self.latency_hiding:
            self._sends.append((request, data))
            if not request.Test():  # one that needs this rank's MPI calls to go on (a rendezvous)
                self._unfinished.append(request)
        else:
            self.wait_for([request], "wait for send")

    def _post(self, op: Op) -> None:
        from mpi4py import MPI

        assert op.dtype is not None
        buffer = np.empty(op.shape, dtype=op.dtype)
        op.buffer = buffer
        op.request = self.comm.Irecv([buffer.reshape(-1).view(np.uint8), MPI.BYTE], source=op.peer, tag=op.tag)  # type: ignore[attr-defined]

    def _received(self, op: Op, status: object) -> None:
        from mpi4py import MPI

        assert op.buffer is not None
        count = status.Get_count(MPI.BYTE)  # type: ignore[attr-defined]
        if count != op.buffer.nbytes:
            raise RuntimeError(f"rank {self.rank}: a message from rank {op.peer} (tag {op.tag}) has {count} bytes, not the {op.buffer.nbytes} planned")
        op.request = None
        self.stats.messages_received += 1
        self.stats.bytes_received += op.buffer.nbytes

    def wait_for(self, requests: list, what: str) -> None:
        began = time.perf_counter()
        waiting.wait_all(requests, self.yielding)
        self._waited(began, what)

    def _waited(self, began: float, what: str) -> None:
        ended = time.perf_counter()
        self.stats.wait_seconds += ended - began
        tracer = trace.TRACER
        if tracer is not None:
            tracer.complete(what, "wait", began, ended)

    # ------------------------------------------------------------------ the loop's hooks

    def _submit(self, block: BlockOp) -> None:
        op = self._plan[id(block)]
        assert op.kind == "receive"
        self._post(op)
        self._receiving.append(block)

    def poll(self, timeout: float | None) -> Sequence[Completion]:
        """The receives found finished. The loop calls this when nothing else can run: first the
        computations gathered so far go to the node engine (and the receives are only tested),
        and only if there were none does it wait for a receive (``timeout`` None). Releases
        alone stay gathered: they compute nothing that waiting could overlap, and a node-engine
        batch costs 25-30 µs however little it does."""
        if any(instruction.op != "release" for instruction in self._batch.instructions):
            self.submit_batch()
            timeout = 0
        if not self._receiving:
            return []
        return self._test_receives(wait=timeout is None)

    def _test_receives(self, wait: bool) -> list[Completion]:
        from mpi4py import MPI

        receiving = self._receiving
        statuses = [MPI.Status() for _ in receiving]
        requests = [self._plan[id(block)].request for block in receiving]
        if wait:
            began = time.perf_counter()
            indices = waiting.wait_some(requests, statuses, self.yielding)
            self._waited(began, "wait for receive")
        else:
            indices = MPI.Request.Testsome(requests, statuses)
        finished: list[Completion] = []
        for position, index in enumerate(indices or ()):  # statuses come in the order of the indices
            block = receiving[index]
            self._received(self._plan[id(block)], statuses[position])
            finished.append((block, None))
        if finished:
            done = {id(block) for block, _ in finished}
            self._receiving = [block for block in receiving if id(block) not in done]
        return finished

    def _serial_run(self, op: Op) -> None:
        from mpi4py import MPI

        if op.kind == "compute":
            self._add_compute(op)
        elif op.kind == "send":
            self._send(op)
        else:
            self._post(op)
            status = MPI.Status()
            began = time.perf_counter()
            waiting.wait(op.request, status, self.yielding)
            self._waited(began, "wait for receive")
            self._received(op, status)

    # ------------------------------------------------------------------ the flush

    def run(self, ops: list[Op], template: Template | None = None, last: bool = True) -> None:
        """Run ``ops`` (this rank's operations for one batch, in program order, following the
        cached plan ``template`` if they do) to the end. Unless they are the ``last`` part of
        their batch, their sends may still be under way when it returns, and computations alone
        stay gathered for the next part (the node engine then fuses a loop's iterations as it
        would the whole batch's)."""
        began = time.perf_counter()
        try:
            if all(op.kind == "compute" for op in ops):  # nothing to overlap: program order, one batch
                for op in ops:
                    self._add_compute(op)
                if not last:
                    return
            elif self.latency_hiding and all(op.kind == "compute" or op.late for op in ops):
                self._run_late(ops)
            else:
                self.submit_batch()  # an earlier part's: which sends may read is known for this part's only
                blocks = self._blocks(ops, template)
                if self.latency_hiding:
                    receives = sum(1 for op in ops if op.kind == "receive")
                    run_ready(blocks, self._submit, self, capacity=receives + 1)
                else:
                    run_ready(blocks, self._submit, self, capacity=1, serial=True)
            self.submit_batch()
            if last:
                requests = [request for request, _ in self._sends]
                self._sends = []
                self._unfinished = []
                if requests:
                    self.wait_for(requests, "wait for sends")
        finally:
            self._plan = {}
            self._block_of = {}
            self._feeding.clear()
            self._receiving = []
            self.stats.busy_seconds += time.perf_counter() - began

    def _run_late(self, ops: list[Op]) -> None:
        """Run ``ops`` whose messages are all late (reductions' partial results and results):
        the computations that need no message go to the node engine as one batch, in program
        order, then the sends leave, and only what waits for a receive (with whatever it orders
        after itself) goes through the dependency lists. Drawing those lists for every
        operation cost Black-Scholes at 2 ranks 15 µs an operation, about 2,300 a batch.

        An operation is held back if it touches (at the dependency lists' block keys) what a
        held-back operation writes, or writes what one reads or a waiting send still has to
        read; so each runs after everything it follows in program order and shares data with."""
        held_writes: set[tuple[int, int]] = set()
        held_reads: set[tuple[int, int]] = set()
        held: list[Op] = []
        sends: list[Op] = []
        for op in ops:
            reads = self._keys(op.reads)
            writes = self._keys(op.writes)
            if op.kind == "receive" or not held_writes.isdisjoint(reads) or not held_writes.isdisjoint(writes) or not held_reads.isdisjoint(writes):
                held.append(op)
                held_writes.update(writes)
                held_reads.update(reads)
            elif op.kind == "send":
                sends.append(op)
                held_reads.update(reads)
            else:
                self._add_compute(op)
        self.submit_batch()
        for op in sends:
            self._send(op)
        if held:
            receives = sum(1 for op in held if op.kind == "receive")
            run_ready(self._blocks(held), self._submit, self, capacity=receives + 1)

    def _blocks(self, ops: list[Op], template: Template | None = None) -> list[BlockOp]:
        """``ops`` as block operations in the shared dependency lists, prioritised.

        Operations replayed from ``template`` (the cached plan they follow) have the graph the
        dependency lists drew for the plan's first operations: bases are renumbered one to one and
        those of one layout have one block size. It is drawn once and kept with the plan."""
        count = len(ops)
        graph = None if template is None else template.graph
        blocks = []
        for position, op in enumerate(ops):
            if not self.latency_hiding:
                seq, run = position, self._serial_run
            elif op.kind == "receive":
                seq, run = position - 3 * count, None
            elif op.kind == "send":
                seq, run = position + (count if op.late else -2 * count), self._send
            else:
                seq, run = position, self._add_compute
            keys = ((), ()) if graph is not None else (self._keys(op.reads), self._keys(op.writes))
            block = BlockOp(seq, _never if run is None else functools.partial(run, op), *keys, inline=op.kind != "receive" or not self.latency_hiding, label=op.kind)
            self._plan[id(block)] = op
            self._block_of[id(op)] = block
            blocks.append(block)
        if graph is None:
            lists = DependencyLists()
            for block in blocks:
                lists.insert(block)
            if template is not None:
                index = {id(block): position for position, block in enumerate(blocks)}
                template.graph = [tuple(index[id(dependent)] for dependent in block.dependents) for block in blocks]
            return blocks
        self.graphs_reused += 1
        for block, dependents in zip(blocks, graph, strict=True):
            block.dependents = [blocks[position] for position in dependents]
            for position in dependents:
                blocks[position].waits += 1
                blocks[position].refcount += 1
        return blocks


def _work(batch: Batch) -> int:
    """The elements ``batch``'s instructions write."""
    return sum(math.prod(view.shape) for instruction in batch.instructions for view in instruction.outputs)


class SendProgress:
    """Tests this rank's unfinished sends from a thread of its own while the node engine computes
    and the rank makes no MPI call: 0.1 ms after :meth:`begin`, then at doubling intervals up to
    2 ms, until they are done or :meth:`end`. MPI moves some messages only inside the sender's
    MPI calls (a rendezvous; MPICH's shared-memory messages of two cells), so without it the
    neighbour waited for this rank's whole node-engine batch. The thread level is
    ``serialized``: the lock keeps its tests and the rank's own calls apart."""

    FIRST = 0.0001
    LONGEST = 0.002

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._requests: list = []
        self._active = False
        self._thread = threading.Thread(target=self._run, name="shoal-send-progress", daemon=True)
        self._thread.start()

    def begin(self, requests: list) -> None:
        with self._lock:
            self._requests = requests
            self._active = True
            self._lock.notify()

    def end(self) -> None:
        with self._lock:
            self._active = False
            self._requests = []

    def _run(self) -> None:
        from mpi4py import MPI

        lock = self._lock
        while True:
            with lock:
                while not self._active:
                    lock.wait()
                interval = self.FIRST
                while self._active:
                    lock.wait(interval)
                    if self._active and MPI.Request.Testall(self._requests):
                        self._active = False
                    interval = min(self.LONGEST, 2 * interval)


def _never() -> None:
    raise AssertionError("a receive is submitted, never run on the loop's thread")

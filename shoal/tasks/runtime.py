"""The task runtime: builds the graph, schedules onto workers, moves data, handles failures."""

from __future__ import annotations

import atexit
import contextlib
import itertools
import selectors
import threading
import warnings
from collections import deque
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING

import numpy as np

from shoal.tasks import shm, wire
from shoal.tasks.arguments import check_argument, task_slots
from shoal.tasks.directions import Direction, ParameterSpec
from shoal.tasks.errors import (
    RemoteTraceback,
    RuntimeShutdownError,
    SharedMemoryFallbackWarning,
    TaskDependencyError,
    WorkerLostError,
)
from shoal.tasks.future import Future
from shoal.tasks.graph import MISSING, Binding, Datum, Graph, TaskNode, TaskState, Version
from shoal.tasks.pool import WorkerHandle, start_worker, stop_worker

if TYPE_CHECKING:
    from shoal.tasks.decorator import TaskFunction

#: Tasks queued on one worker at a time: one running, one waiting behind it.
WORKER_CAPACITY = 2
#: A task whose function ran shorter than this (moving average) counts as short.
SHORT_TASK_SECONDS = 0.001
#: Capacity is counted in units: a task costs LONG_TASK_UNITS, a short one 1, so a worker
#: queues up to WORKER_CAPACITY long tasks or WORKER_CAPACITY * LONG_TASK_UNITS short ones.
LONG_TASK_UNITS = 16
CAPACITY_UNITS = WORKER_CAPACITY * LONG_TASK_UNITS
#: Automatic promotion ignores arrays smaller than this: pickling them costs less than a segment.
AUTO_SHARE_MIN_BYTES = 256 * 1024
#: A task whose worker dies is run again once; the next death fails it.
MAX_ATTEMPTS = 2


def _blas_threads(workers: int) -> int:
    from shoal.threads import available_cores

    return max(1, available_cores() // workers)


class Runtime:
    """One pool of worker processes and the graph of the tasks submitted to it."""

    def __init__(self, workers: int | None = None, auto_share: bool = True) -> None:
        from shoal.threads import available_cores

        count = available_cores() if workers is None else workers
        if not isinstance(count, int) or count < 1:
            raise ValueError(f"workers must be a positive integer, got {workers!r}")
        self.auto_share = auto_share
        self.job = shm.new_job_name()
        shm.sweep_dead_jobs()
        self._lock = threading.RLock()
        self._changed = threading.Condition(self._lock)
        self._graph = Graph()
        self._ready: deque[TaskNode] = deque()
        self._unfinished = 0
        self._segments: set[str] = set()
        self._closed = False
        self._blas_threads = _blas_threads(count)
        self._indexes = itertools.count()
        self._workers: dict[int, WorkerHandle] = {}
        self._generation = 0  # bumped when the set of workers changes
        self._seconds: dict[tuple[str, str], float] = {}  # moving average run time per function
        self._awaited: dict[Version, int] = {}  # versions that wait_on callers are blocked on
        self._wake_reader, self._wake_writer = _wake_pipe()
        for _ in range(count):
            self._add_worker()
        self._receiver = threading.Thread(target=self._receive_loop, name="shoal-receiver", daemon=True)
        self._receiver.start()
        atexit.register(self.shutdown)

    # workers -----------------------------------------------------------------------------------
    def _add_worker(self) -> WorkerHandle:
        handle = start_worker(next(self._indexes), self.job, self._blas_threads, self._send_failed)
        self._workers[handle.index] = handle
        self._generation += 1
        return handle

    @property
    def worker_pids(self) -> list[int]:
        """Process ids of the live workers."""
        with self._lock:
            return [h.process.pid for h in self._workers.values() if h.process.pid is not None]

    @property
    def segment_names(self) -> list[str]:
        """Shared-memory segments currently owned by this runtime."""
        with self._lock:
            return sorted(self._segments)

    # submission --------------------------------------------------------------------------------
    def submit(self, function: TaskFunction, args: tuple[object, ...], kwargs: dict[str, object]) -> object:
        """Add one call of ``function`` to the graph; returns its future(s) at once."""
        slots = task_slots(function, args, kwargs)
        with self._lock:
            self._check_open()
            self._drain_orphans()
            resolved = [(slot, spec, value, self._datum_of(value, spec)) for slot, spec, value in slots]
            for slot, spec, value, datum in resolved:
                check_argument(function.qualname, slot, spec, value, datum)
            node = self._graph.new_task(function.module, function.qualname, function.returns)
            bindings = []
            for slot, spec, value, datum in resolved:
                binding = Binding(slot, spec)
                bindings.append(binding)
                if datum is None and (spec.direction.writes or isinstance(value, np.ndarray)):
                    datum = self._graph.new_datum(value)
                if datum is None:
                    binding.value = value
                elif spec.direction is Direction.OUT:
                    binding.value = datum.owner()
                else:
                    self._graph.bind_read(node, binding, datum)
                    if binding.reads is not None and binding.reads.number == 0:
                        binding.value = datum.owner()
            for binding, (_, spec, _, _) in zip(bindings, resolved):
                if spec.direction.writes:
                    datum = self._datum_of(binding.value, spec) if binding.reads is None else binding.reads.datum
                    assert datum is not None
                    self._graph.bind_write(node, binding, datum)
            node.bindings = bindings
            orphans = self._graph.orphans
            futures = [Future(self._graph.add_return(node), self, orphans) for _ in range(function.returns)]
            self._unfinished += 1
            failed_input = next((v.error for v in node.read_versions() if v.error is not None), None)
            if failed_input is not None:
                error = TaskDependencyError(f"task {node.name} did not run: one of its inputs failed")
                error.__cause__ = failed_input
                self._fail([node], error)
            elif node.waiting_on == 0:
                node.state = TaskState.READY
                self._schedule([node])
            self._release_superseded(node)
        if function.returns == 0:
            return None
        return futures[0] if function.returns == 1 else tuple(futures)

    def _datum_of(self, value: object, spec: ParameterSpec) -> Datum | None:
        if isinstance(value, Future):
            if value._runtime is not self or value._datum.orphaned:
                raise ValueError(f"{value!r} was deleted or belongs to a runtime that was shut down")
            return value._datum
        return self._graph.lookup(value)

    def _release_superseded(self, node: TaskNode) -> None:
        for binding in node.written_bindings():
            assert binding.writes is not None
            previous = binding.writes.datum.versions.get(binding.writes.number - 1)
            if previous is not None and self._graph.unneeded(previous):
                self._release(previous)

    # scheduling --------------------------------------------------------------------------------
    def _schedule(self, nodes: list[TaskNode]) -> None:
        for node in nodes:
            handle = self._pick_worker(node)
            if handle is None:
                self._ready.append(node)
            else:
                self._dispatch(node, handle)

    @staticmethod
    def _locality(node: TaskNode, handle: WorkerHandle) -> int:
        reads = node.read_versions()
        if not reads:
            return 0
        return sum(v.nbytes for v in reads if handle.index in v.holders)

    def _pick_worker(self, node: TaskNode) -> WorkerHandle | None:
        best: WorkerHandle | None = None
        best_key = (-1, 0)
        for handle in self._workers.values():
            if handle.load >= CAPACITY_UNITS:
                continue
            key = (self._locality(node, handle), -handle.load)
            if key > best_key:
                best, best_key = handle, key
        return best

    def _fill(self, handle: WorkerHandle) -> None:
        while self._ready and handle.alive and handle.load < CAPACITY_UNITS:
            window = list(itertools.islice(self._ready, 16))
            scores = [self._locality(node, handle) for node in window]
            position = scores.index(max(scores))
            node = window[position]
            del self._ready[position]
            self._dispatch(node, handle)

    def _dispatch(self, node: TaskNode, handle: WorkerHandle) -> None:
        try:
            args: list[wire.Arg] = []
            kwargs: dict[str, wire.Arg] = {}
            for binding in node.bindings:
                arg = self._arg_for(node, binding, handle)
                if isinstance(binding.slot, int):
                    args.append(arg)
                else:
                    kwargs[binding.slot] = arg
        except Exception as error:
            self._fail([node], error)
            return
        drops, segments = handle.take_drops()
        estimate = self._seconds.get((node.module, node.qualname))
        short = estimate is not None and estimate < SHORT_TASK_SECONDS
        message = wire.TaskMessage(
            node.task_id,
            node.module,
            node.qualname,
            args,
            kwargs,
            [b.slot for b in node.written_bindings()],
            [v.key for v in node.output_versions()],
            node.returns,
            drops,
            segments,
            short,
        )
        node.state = TaskState.RUNNING
        node.worker = handle.index
        handle.add(node, 1 if short else LONG_TASK_UNITS)
        handle.outbox.put(message)

    def _arg_for(self, node: TaskNode, binding: Binding, handle: WorkerHandle) -> wire.Arg:
        version = binding.reads
        if version is None:
            return wire.ValueArg(binding.value)
        value = binding.value if version.number == 0 else version.value
        if binding.spec.recurrent_read_only and not isinstance(value, np.ndarray):
            raise TypeError(
                f"task {node.name}: parameter {binding.slot!r} is marked recurrent read-only, "
                f"which needs a NumPy array, got {type(value).__name__}"
            )
        if binding.spec.direction is Direction.IN and isinstance(value, np.ndarray):
            if version.segment is None and self._should_share(binding, version, value):
                self._place(version, value, binding.spec.recurrent_read_only)
            if version.segment is not None:
                version.mapped_by.add(handle.index)
                return wire.SharedArg(version.segment)
            if version.snapshot is None and self._should_snapshot(version, value):
                self._take_snapshot(version, value)
            if version.snapshot is not None:
                return wire.SharedArg(version.snapshot, private=True)
        if handle.index in version.holders:
            take = binding.spec.direction is Direction.INOUT
            if take:
                version.holders.discard(handle.index)
            return wire.CachedArg(version.key, take)
        return wire.ValueArg(value)

    def _should_share(self, binding: Binding, version: Version, value: np.ndarray) -> bool:
        if value.dtype.hasobject or version.share_refused:
            return False
        if binding.spec.recurrent_read_only:
            return True
        return (
            self.auto_share
            and version.number == 0
            and version.reads_seen >= 2
            and value.nbytes >= AUTO_SHARE_MIN_BYTES
        )

    def _should_snapshot(self, version: Version, value: np.ndarray) -> bool:
        return (
            self.auto_share
            and version.number == 0
            and not version.share_refused
            and not value.dtype.hasobject
            and value.nbytes >= AUTO_SHARE_MIN_BYTES
            and shm.fits(value.nbytes)
        )

    def _take_snapshot(self, version: Version, value: np.ndarray) -> None:
        """First sight of a large caller array: send it as a copy-on-write snapshot."""
        name = shm.segment_name(self.job, version.datum.data_id, version.number) + "-first"
        self._segments.add(name)
        version.snapshot = shm.create_or_attach(name, value)

    def _drop_snapshot(self, version: Version) -> None:
        if version.snapshot is not None:
            shm.unlink(version.snapshot.name)
            self._segments.discard(version.snapshot.name)
            version.snapshot = None

    def _place(self, version: Version, value: np.ndarray, explicit: bool) -> None:
        snapshot = version.snapshot
        if snapshot is not None and shm.holds(snapshot, value):
            # The array is unchanged since its first task: that snapshot becomes the segment.
            version.snapshot = None
            self._publish(version, snapshot, value, explicit)
            return
        self._drop_snapshot(version)
        name = shm.segment_name(self.job, version.datum.data_id, version.number)
        if not shm.fits(value.nbytes):
            version.share_refused = True
            warnings.warn(
                f"not enough free space in {shm.SHM_DIR} for a {value.nbytes}-byte array; "
                f"sending it by value instead",
                SharedMemoryFallbackWarning,
                stacklevel=2,
            )
            return
        self._segments.add(name)
        self._publish(version, shm.create_or_attach(name, value), value, explicit)

    @staticmethod
    def _publish(version: Version, segment: shm.SegmentRef, value: np.ndarray, explicit: bool) -> None:
        version.segment = segment
        if not explicit and value.flags.writeable:
            # The segment is a snapshot: writes through the caller's array would go unseen.
            value.flags.writeable = False
            version.locked_owner = True

    # completion --------------------------------------------------------------------------------
    def _receive_loop(self) -> None:
        selector = selectors.PollSelector()
        registered = -1
        try:
            while not self._closed:
                if registered != self._generation:
                    registered = self._register(selector)
                for key, _ in selector.select(timeout=1.0):
                    if key.data is None:
                        with contextlib.suppress(OSError, EOFError):
                            self._wake_reader.recv_bytes()
                    else:
                        self._drain(key.data)
        finally:
            selector.close()

    def _register(self, selector: selectors.BaseSelector) -> int:
        """Watch the wake pipe and every live worker's connection and sentinel."""
        with self._lock:
            generation = self._generation
            handles = [h for h in self._workers.values() if h.alive]
        for key in list(selector.get_map().values()):
            selector.unregister(key.fileobj)
        selector.register(self._wake_reader, selectors.EVENT_READ, None)
        for handle in handles:
            selector.register(handle.connection, selectors.EVENT_READ, handle)
            selector.register(handle.process.sentinel, selectors.EVENT_READ, handle)
        return generation

    def _drain(self, handle: WorkerHandle) -> None:
        while handle.alive:
            try:
                if not handle.connection.poll(0):
                    if not handle.process.is_alive():
                        self._worker_died(handle)
                    return
                replies = wire.receive(handle.connection)
            except (EOFError, OSError):
                self._worker_died(handle)
                return
            self._on_replies(handle, replies)  # type: ignore[arg-type]

    def _on_replies(self, handle: WorkerHandle, replies: list[wire.DoneMessage | wire.FailedMessage]) -> None:
        with self._lock:
            self._drain_orphans()
            wake = False
            for message in replies:
                node = handle.remove(message.task_id)
                if node is None or node.state is not TaskState.RUNNING:
                    continue
                if isinstance(message, wire.DoneMessage):
                    self._note_seconds(node, message.seconds)
                    ready = self._graph.complete(node, message.outputs, handle.index)
                    self._unfinished -= 1
                    outputs = node.output_versions()
                    wake = wake or any(v in self._awaited for v in outputs)
                    for version in self._graph.finish_reads(node) + outputs:
                        if self._graph.unneeded(version):
                            self._release(version)
                    self._schedule(ready)
                else:
                    self._fail([node], _remote_error(node, message))
                    wake = True
            self._fill(handle)
            if wake or self._unfinished == 0:
                self._changed.notify_all()

    def _note_seconds(self, node: TaskNode, seconds: float) -> None:
        key = (node.module, node.qualname)
        previous = self._seconds.get(key)
        self._seconds[key] = seconds if previous is None else 0.7 * previous + 0.3 * seconds

    def _send_failed(self, handle: WorkerHandle, message: wire.TaskMessage, error: BaseException) -> None:
        with self._lock:
            node = handle.remove(message.task_id)
            if node is not None:
                failure = TypeError(f"task {node.name}: an argument could not be sent to the worker: {error}")
                failure.__cause__ = error
                self._fail([node], failure)
                self._fill(handle)
                self._changed.notify_all()

    def _fail(self, nodes: list[TaskNode], error: BaseException) -> None:
        for node in nodes:
            for failed in self._graph.fail(node, error):
                self._unfinished -= 1
                with contextlib.suppress(ValueError):
                    self._ready.remove(failed)
                for version in self._graph.finish_reads(failed):
                    self._release(version)

    def _worker_died(self, handle: WorkerHandle) -> None:
        with self._lock:
            if not handle.alive:
                return
            handle.alive = False
            del self._workers[handle.index]
            self._generation += 1
            handle.process.join(1.0)
            code = handle.process.exitcode
            handle.outbox.put(None)
            orphaned_tasks = handle.remove_all()
            if self._closed:
                return
            replacement = self._add_worker()
            for node in orphaned_tasks:
                node.attempts += 1
                if node.attempts >= MAX_ATTEMPTS:
                    self._fail([node], WorkerLostError(
                        f"task {node.name} was running on {handle.description}, which died "
                        f"(exit code {code}); it had already been retried once after a worker died"
                    ))
                else:
                    node.state = TaskState.READY
                    self._ready.appendleft(node)
            self._fill(replacement)
            for other in list(self._workers.values()):
                self._fill(other)
            self._changed.notify_all()
        with contextlib.suppress(OSError):
            self._wake_writer.send_bytes(b"")

    # data release ------------------------------------------------------------------------------
    def _release(self, version: Version) -> None:
        if version.released:
            return
        version.released = True
        version.value = MISSING
        version.datum.versions.pop(version.number, None)
        for index in version.holders:
            handle = self._workers.get(index)
            if handle is not None:
                handle.pending_drops.append(version.key)
        self._drop_snapshot(version)
        if version.segment is not None:
            shm.unlink(version.segment.name)
            self._segments.discard(version.segment.name)
            for index in version.mapped_by:
                handle = self._workers.get(index)
                if handle is not None:
                    handle.pending_segment_drops.append(version.segment.name)
        if version.locked_owner:
            owner = version.datum.owner()
            if isinstance(owner, np.ndarray):
                with contextlib.suppress(ValueError):
                    owner.flags.writeable = True

    def _drain_orphans(self) -> None:
        while self._graph.orphans:
            self._forget(self._graph.orphans.pop())

    def _forget(self, datum: Datum) -> None:
        self._graph.forget(datum)
        for version in list(datum.versions.values()):
            if self._graph.unneeded(version):
                self._release(version)

    def _flush_drops(self) -> None:
        for handle in self._workers.values():
            if handle.pending_drops or handle.pending_segment_drops:
                handle.outbox.put(wire.DropMessage(*handle.take_drops()))

    # synchronization ---------------------------------------------------------------------------
    def wait_on(self, value: object) -> object:
        """The value of a future or of the latest version of data passed to tasks."""
        with self._lock:
            if isinstance(value, list | tuple) and self._graph.lookup(value) is None:
                return type(value)(self.wait_on(item) for item in value)
            datum = value._datum if isinstance(value, Future) else self._graph.lookup(value)
            if isinstance(value, Future) and (value._runtime is not self or datum.orphaned):
                raise ValueError(f"{value!r} was deleted or belongs to another task runtime")
            if datum is None:
                return value
            version = datum.latest
            self._awaited[version] = self._awaited.get(version, 0) + 1
            try:
                while not version.done:
                    self._check_open()
                    self._changed.wait(0.5)
            finally:
                if self._awaited[version] == 1:
                    del self._awaited[version]
                else:
                    self._awaited[version] -= 1
            if version.error is not None:
                raise version.error
            return datum.owner() if version.number == 0 else version.value

    def barrier(self) -> None:
        """Wait until every submitted task has finished or failed."""
        with self._lock:
            while self._unfinished > 0:
                self._check_open()
                self._changed.wait(0.5)
            self._drain_orphans()
            self._flush_drops()

    def delete(self, value: object) -> None:
        """Release data: its versions, worker copies and shared segments, once no task needs them."""
        with self._lock:
            if isinstance(value, list | tuple) and self._graph.lookup(value) is None:
                for item in value:
                    self.delete(item)
                return
            datum = value._datum if isinstance(value, Future) else self._graph.lookup(value)
            if datum is None:
                return
            self._forget(datum)
            self._flush_drops()

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeShutdownError("the task runtime has been shut down")

    # shutdown ----------------------------------------------------------------------------------
    def shutdown(self, timeout: float = 10.0) -> None:
        """Stop the workers, fail unfinished tasks and unlink every segment of this job."""
        with self._lock:
            if self._closed:
                return
            self._closed = True
            handles = list(self._workers.values())
            self._workers.clear()
            pending = [n for h in handles for n in h.remove_all()] + list(self._ready)
            self._ready.clear()
            self._fail(pending, RuntimeShutdownError("the task runtime was shut down before the task ran"))
            self._changed.notify_all()
        atexit.unregister(self.shutdown)
        with contextlib.suppress(OSError):
            self._wake_writer.send_bytes(b"")
        for handle in handles:
            stop_worker(handle, timeout)
        self._receiver.join(timeout)
        with self._lock:
            for name in self._segments:
                shm.unlink(name)
            self._segments.clear()
        shm.sweep(self.job)
        self._wake_reader.close()
        self._wake_writer.close()


def _wake_pipe() -> tuple[Connection, Connection]:
    import multiprocessing

    reader, writer = multiprocessing.Pipe(duplex=False)
    return reader, writer


def _remote_error(node: TaskNode, message: wire.FailedMessage) -> BaseException:
    error = message.exception
    if error is None:
        error = RuntimeError(f"task {node.name} raised {message.description}, which could not be pickled")
    error.__cause__ = RemoteTraceback(message.traceback)
    error.add_note(f"raised by task {node.name} on {message.worker}")
    return error


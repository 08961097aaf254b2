"""The task runtime: the public face that builds the graph, waits, releases and shuts down.

Its parts live in files of their own: ``scheduling`` (which worker runs a task),
``placement`` (arrays in shared memory), ``receiving`` (replies from workers),
``recovery`` (failures and lost workers) and ``release`` (data no task needs).
"""

from __future__ import annotations

import atexit
import contextlib
import itertools
import sys
import threading
import time
from collections import deque
from typing import TYPE_CHECKING

import numpy as np

from shoal import trace
from shoal.tasks import shm, signals, wire
from shoal.tasks.arguments import check_argument, plain_value, task_slots
from shoal.tasks.directions import Direction, ParameterSpec
from shoal.tasks.errors import RuntimeShutdownError, TaskCancelledError, TaskDependencyError
from shoal.tasks.future import Future
from shoal.tasks.graph import Binding, Datum, Graph, TaskNode, TaskState, Version
from shoal.tasks.placement import AUTO_SHARE_MIN_BYTES, Placement
from shoal.tasks.pool import REAP_SECONDS, WorkerHandle, stop_workers
from shoal.tasks.receiving import Receiving, wake_pipe
from shoal.tasks.recovery import MAX_ATTEMPTS, Recovery
from shoal.tasks.release import Release
from shoal.tasks.scheduling import CAPACITY_UNITS, LONG_TASK_UNITS, WORKER_CAPACITY, Scheduling

if TYPE_CHECKING:
    from shoal.tasks.decorator import TaskFunction

__all__ = [
    "AUTO_SHARE_MIN_BYTES",
    "CAPACITY_UNITS",
    "LONG_TASK_UNITS",
    "MAX_ATTEMPTS",
    "WORKER_CAPACITY",
    "Runtime",
]


def _seconds(name: str, value: object) -> float:
    """A number of seconds given as an argument: a non-negative real number."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise ValueError(f"{name} must be a non-negative number of seconds, got {value!r}")
    return float(value)


def _blas_threads(workers: int) -> int:
    from shoal.threads import available_cores

    return max(1, available_cores() // workers)


class Runtime(Scheduling, Placement, Receiving, Recovery, Release):
    """One pool of worker processes and the graph of the tasks submitted to it."""

    def __init__(self, workers: int | None = None, auto_share: bool = True) -> None:
        from shoal.threads import available_cores

        trace.from_settings()
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
        self._generation = 0
        self._seconds: dict[tuple[str, str], float] = {}
        self._awaited: dict[Version, int] = {}
        self._running_timed: dict[TaskNode, WorkerHandle] = {}
        self._wake_reader, self._wake_writer = wake_pipe()
        self._alive_reader, self._alive_writer = wake_pipe()
        for _ in range(count):
            self._add_worker()
        self._receiver = threading.Thread(target=self._receive_loop, name="shoal-receiver", daemon=True)
        self._receiver.start()
        atexit.register(self._shutdown_at_exit)
        signals.watch(self)

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
        tracer = trace.TRACER
        if tracer is None:
            return self._submit(function, args, kwargs)
        with tracer.span(f"submit {function.qualname}", "scheduling"):
            return self._submit(function, args, kwargs)

    def _submit(self, function: TaskFunction, args: tuple[object, ...], kwargs: dict[str, object]) -> object:
        slots = [(slot, spec, plain_value(value)) for slot, spec, value in task_slots(function, args, kwargs)]
        code = function.code()
        with self._lock:
            self._check_open()
            self._drain_orphans()
            resolved = [(slot, spec, value, self._datum_of(value, spec)) for slot, spec, value in slots]
            for slot, spec, value, datum in resolved:
                check_argument(function.qualname, slot, spec, value, datum)
            node = self._graph.new_task(function.module, function.qualname, function.returns)
            node.timeout = function.timeout
            node.code = code
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

    # synchronization ---------------------------------------------------------------------------
    def wait_on(self, value: object, timeout: float | None = None) -> object:
        """The value of a future or of the latest version of data passed to tasks.

        With ``timeout`` (seconds), raises ``TimeoutError`` if the value is not ready by then;
        the task goes on running.
        """
        deadline = None if timeout is None else time.monotonic() + _seconds("timeout", timeout)
        tracer = trace.TRACER
        if tracer is None:
            return self._wait(value, deadline, timeout)
        with tracer.span("wait_on", "wait"):
            return self._wait(value, deadline, timeout)

    def _wait(self, value: object, deadline: float | None, timeout: float | None) -> object:
        value = plain_value(value)
        with self._lock:
            if isinstance(value, list | tuple) and self._graph.lookup(value) is None:
                return type(value)(self._wait(item, deadline, timeout) for item in value)
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
                    wait = 0.5
                    if deadline is not None:
                        wait = min(wait, deadline - time.monotonic())
                        if wait <= 0:
                            raise TimeoutError(f"wait_on: {value!r} was not ready within {timeout:g} s")
                    self._changed.wait(wait)
            finally:
                if self._awaited[version] == 1:
                    del self._awaited[version]
                else:
                    self._awaited[version] -= 1
            if version.error is not None:
                raise version.error
            return datum.owner() if version.number == 0 else version.value

    def cancel(self, future: Future) -> bool:
        """Cancel the task producing ``future``: False if it already finished or failed.

        A task that is running is stopped by replacing its worker; the tasks queued behind
        it on that worker run elsewhere. Its futures, and those of tasks depending on it,
        raise :class:`~shoal.tasks.errors.TaskCancelledError`.
        """
        with self._lock:
            version = future._datum.versions.get(future._datum.current)
            node = None if version is None else version.producer
            if future._runtime is not self or node is None or version is None or version.done:
                return False
            error = TaskCancelledError(f"task {node.name} was cancelled")
            handle = None if node.worker is None else self._workers.get(node.worker)
            if node.state is TaskState.RUNNING and handle is not None and node.task_id in handle.in_flight:
                if next(iter(handle.in_flight)) == node.task_id:  # it may be running: stop it
                    error.add_note(f"it was stopped on {handle.description}, which was replaced")
                    self._stop_worker_for(handle, {node: error})
                    self._changed.notify_all()
                    return True
                handle.remove(node.task_id)  # queued behind another task: the worker skips it
                handle.outbox.put(wire.CancelMessage([node.task_id]))
                self._fail([node], error)
                self._fill(handle)
                self._changed.notify_all()
                return True
            self._fail([node], error)
            self._changed.notify_all()
            return True

    def barrier(self) -> None:
        """Wait until every submitted task has finished or failed."""
        tracer = trace.TRACER
        with contextlib.nullcontext() if tracer is None else tracer.span("barrier", "wait"), self._lock:
            while self._unfinished > 0:
                self._check_open()
                self._changed.wait(0.5)
            self._drain_orphans()
            self._flush_drops()

    def delete(self, value: object) -> None:
        """Release data: its versions, worker copies and shared segments, once no task needs them."""
        value = plain_value(value)
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
    def _shutdown_at_exit(self) -> None:
        """At exit workers may finish their task, unless Ctrl-C ended the program: then they are
        killed without taking the runtime's lock, which the interrupt may have struck while it
        was being taken or given back (a worker left alive would keep the exit waiting)."""
        if isinstance(getattr(sys, "last_value", None), KeyboardInterrupt):
            self.stop_now()
            return
        self.shutdown(10.0)

    def stop_now(self) -> None:
        """Kill every worker and unlink every segment at once (the program is ending).

        Safe from a signal handler: takes no lock, and the receiver starts no replacement
        for workers it sees die once the runtime is closed.
        """
        self._closed = True
        for handle in list(self._workers.values()):
            with contextlib.suppress(Exception):
                handle.process.kill()
        for name in list(self._segments):
            shm.unlink(name)
        shm.sweep(self.job)

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
        atexit.unregister(self._shutdown_at_exit)
        signals.unwatch(self)
        with contextlib.suppress(OSError):
            self._wake_writer.send_bytes(b"")
        stop_workers(handles, timeout)
        self._receiver.join(max(timeout, REAP_SECONDS))
        with self._lock:
            for name in self._segments:
                shm.unlink(name)
            self._segments.clear()
        shm.sweep(self.job)
        self._wake_reader.close()
        self._wake_writer.close()
        self._alive_reader.close()
        self._alive_writer.close()

"""Receiving: the thread that reads workers' replies and records finished and failed tasks."""

from __future__ import annotations

import contextlib
import multiprocessing
import selectors
import time
from multiprocessing.connection import Connection

from shoal import trace
from shoal.tasks import wire
from shoal.tasks.errors import RemoteTraceback
from shoal.tasks.graph import TaskNode, TaskState
from shoal.tasks.pool import WorkerHandle
from shoal.tasks.state import RuntimeState


class Receiving(RuntimeState):
    """The receiver loop: replies, worker deaths (seen as EOF or a sentinel) and wake-ups."""

    def _receive_loop(self) -> None:
        selector = selectors.PollSelector()
        registered = -1
        try:
            while not self._closed:
                if registered != self._generation:
                    registered = self._register(selector)
                for key, _ in selector.select(timeout=self._poll_seconds()):
                    if key.data is None:
                        with contextlib.suppress(OSError, EOFError):
                            self._wake_reader.recv_bytes()
                    else:
                        self._drain(key.data)
                if self._running_timed:
                    self._expire_overdue()
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
            except wire.UndecodableError as error:
                self._undecodable(handle, error)
                continue
            except (EOFError, OSError):
                self._worker_died(handle)
                return
            self._on_replies(handle, replies)  # type: ignore[arg-type]

    def _undecodable(self, handle: WorkerHandle, error: wire.UndecodableError) -> None:
        """Replies that arrived but could not be unpickled fail the tasks they were about."""
        with self._lock:
            for task_id in error.task_ids:
                node = handle.remove(task_id)
                if node is None or node.state is not TaskState.RUNNING:
                    continue
                self._running_timed.pop(node, None)
                failure = RuntimeError(
                    f"the reply of task {node.name} from {handle.description} could not be "
                    f"unpickled in the main process ({len(error.task_ids)} replies travelled "
                    f"together): {error.cause!r}"
                )
                failure.__cause__ = error.cause
                self._fail([node], failure)
            self._fill(handle)
            self._changed.notify_all()

    def _poll_seconds(self) -> float:
        """How long the receiver may wait for replies: at most until the next task is overdue."""
        if not self._running_timed:
            return 1.0
        with self._lock:
            deadlines = [n.deadline for n in self._running_timed if n.deadline is not None]
        return min([1.0, *(d - time.monotonic() for d in deadlines)])

    def _on_replies(self, handle: WorkerHandle, replies: list[wire.DoneMessage | wire.FailedMessage]) -> None:
        with self._lock:
            self._drain_orphans()
            wake = False
            for message in replies:
                if type(message) is wire.StartedMessage:
                    self._started(handle, message.task_id)
                    continue
                node = handle.remove(message.task_id)
                if node is None or node.state is not TaskState.RUNNING:
                    continue
                if node.timeout is not None:
                    self._running_timed.pop(node, None)
                if isinstance(message, wire.DoneMessage):
                    self._note_seconds(node, message.seconds)
                    tracer = trace.TRACER
                    if tracer is not None:
                        _trace_task(tracer, handle, node, message)
                    ready = self._graph.complete(node, message.outputs, handle.index)
                    self._unfinished -= 1
                    outputs = node.output_versions()
                    wake = wake or any(v in self._awaited for v in outputs)
                    for version in self._graph.finish_reads(node) + outputs:
                        if self._graph.unneeded(version):
                            self._release(version)
                    self._schedule(ready)
                else:
                    self._fail([node], remote_error(node, message))
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
            if message.code is not None and message.code_id is not None:
                handle.codes.discard(message.code_id)  # never arrived: send it again next time
            node = handle.remove(message.task_id)
            if node is not None:
                failure = TypeError(f"task {node.name}: an argument could not be sent to the worker: {error}")
                failure.__cause__ = error
                self._fail([node], failure)
                self._fill(handle)
                self._changed.notify_all()


def _trace_task(tracer: trace.Tracer, handle: WorkerHandle, node: TaskNode, message: wire.DoneMessage) -> None:
    """Record a finished task on its worker process's track."""
    pid = handle.process.pid or 0
    tracer.name_track(pid, pid, f"task worker {handle.index}", process=f"shoal task worker {handle.index}")
    end = message.started + message.seconds
    tracer.complete(node.name, "task", message.started, end, {"task": message.task_id}, track=(pid, pid))


def wake_pipe() -> tuple[Connection, Connection]:
    """A pipe whose reader the receiver watches, so that other threads can wake it."""
    reader, writer = multiprocessing.Pipe(duplex=False)
    return reader, writer


def remote_error(node: TaskNode, message: wire.FailedMessage) -> BaseException:
    """The exception a task raised in its worker, with the remote traceback as its cause."""
    error = message.exception
    if error is None:
        error = RuntimeError(f"task {node.name} raised {message.description}, which could not be pickled")
    error.__cause__ = RemoteTraceback(message.traceback)
    error.add_note(f"raised by task {node.name} on {message.worker}")
    return error

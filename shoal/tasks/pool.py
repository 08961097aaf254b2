"""Worker processes of the task runtime, each fed by its own sender thread.

Sends happen on a per-worker thread so that the runtime lock is never held while a pipe
is full: a worker writing a large result and the main process writing a large argument
to the same worker would otherwise wait on each other forever.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import queue
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess

from shoal.tasks import wire
from shoal.tasks.graph import TaskNode
from shoal.tasks.interactive import main_script, unloadable_main_hidden

SendErrorHandler = Callable[["WorkerHandle", wire.TaskMessage, BaseException], None]
Outgoing = wire.TaskMessage | wire.DropMessage | wire.CancelMessage


def _context() -> multiprocessing.context.BaseContext:
    """Forkserver: never forks the (threaded) main process; workers start from a clean server."""
    context = multiprocessing.get_context("forkserver")
    preload = ["shoal.tasks.worker"]
    if main_script() is not None:
        preload.append("__main__")  # so tasks defined in the main script resolve in workers
    context.set_forkserver_preload(preload)
    return context


@dataclass(eq=False)
class WorkerHandle:
    """The main process's view of one worker."""

    index: int
    process: BaseProcess
    connection: Connection
    outbox: queue.SimpleQueue[Outgoing | None]
    sender: threading.Thread | None = None
    in_flight: dict[int, tuple[TaskNode, int]] = field(default_factory=dict)  # id -> (task, units)
    load: int = 0  # capacity units of the tasks in flight
    pending_drops: list[wire.Key] = field(default_factory=list)
    pending_segment_drops: list[str] = field(default_factory=list)
    alive: bool = True
    codes: set[str] = field(default_factory=set)  # functions sent by value, by digest

    @property
    def description(self) -> str:
        return f"worker {self.index} (pid {self.process.pid})"

    def add(self, node: TaskNode, units: int) -> None:
        """Record a task sent to this worker, costing ``units`` of its capacity."""
        self.in_flight[node.task_id] = (node, units)
        self.load += units

    def remove(self, task_id: int) -> TaskNode | None:
        """Forget a task that finished or failed; None if it was not in flight here."""
        entry = self.in_flight.pop(task_id, None)
        if entry is None:
            return None
        self.load -= entry[1]
        return entry[0]

    def remove_all(self) -> list[TaskNode]:
        """Forget every task in flight (the worker died or the runtime stops)."""
        nodes = [node for node, _ in self.in_flight.values()]
        self.in_flight.clear()
        self.load = 0
        return nodes

    def take_drops(self) -> tuple[list[wire.Key], list[str]]:
        drops, segments = self.pending_drops, self.pending_segment_drops
        self.pending_drops, self.pending_segment_drops = [], []
        return drops, segments


def _send_loop(handle: WorkerHandle, on_error: SendErrorHandler) -> None:
    """Send everything queued for the worker as one batch per wake-up; None stops the loop."""
    while True:
        batch = [handle.outbox.get()]
        while batch[-1] is not None:
            try:
                batch.append(handle.outbox.get_nowait())
            except queue.Empty:
                break
        stop = batch[-1] is None
        if stop:
            batch.pop()
        if batch:
            _send_batch(handle, batch, on_error)
        if stop:
            _send_quietly(handle, None)
            return


def _send_batch(handle: WorkerHandle, batch: list[Outgoing], on_error: SendErrorHandler) -> None:
    try:
        tasks = [m for m in batch if type(m) is wire.TaskMessage]
        by_value = any(m.code_id is not None for m in tasks)
        payload = wire.encode(batch, [m.task_id for m in tasks], by_value)
    except BaseException:
        # One argument cannot be pickled (nothing was written yet): send the rest one by one.
        for message in batch:
            try:
                if type(message) is wire.TaskMessage:
                    payload = wire.encode([message], [message.task_id], message.code_id is not None)
                else:
                    payload = wire.encode([message])
            except BaseException as error:  # whatever an argument's pickling raises
                if isinstance(message, wire.TaskMessage):
                    on_error(handle, message, error)
                continue
            _write_quietly(handle, payload)
        return
    _write_quietly(handle, payload)


def _send_quietly(handle: WorkerHandle, message: object) -> None:
    _write_quietly(handle, wire.encode(message))


def _write_quietly(handle: WorkerHandle, payload: wire.Encoded) -> None:
    with contextlib.suppress(OSError, EOFError):  # a dead worker: the receiver notices it
        wire.write(handle.connection, payload)


def start_worker(
    index: int, job: str, blas_threads: int, on_error: SendErrorHandler, alive: Connection
) -> WorkerHandle:
    """Start one worker process and its sender thread.

    ``alive``: the read end of a pipe only the main process can write; the worker ends
    when it reads end-of-file there, even in the middle of a task (the main died).
    """
    from shoal.tasks.worker import worker_main

    context = _context()
    parent_end, child_end = context.Pipe(duplex=True)
    process = context.Process(
        target=worker_main,
        args=(child_end, index, job, blas_threads, alive),
        name=f"shoal-task-worker-{index}",
        daemon=True,
    )
    with unloadable_main_hidden():
        process.start()
    child_end.close()
    handle = WorkerHandle(index, process, parent_end, queue.SimpleQueue())
    handle.sender = threading.Thread(
        target=_send_loop, args=(handle, on_error), name=f"shoal-sender-{index}", daemon=True
    )
    handle.sender.start()
    return handle


#: Seconds to wait for a killed worker to be reaped, or for its sender thread to end.
REAP_SECONDS = 5.0


def stop_workers(handles: list[WorkerHandle], timeout: float) -> None:
    """Ask workers to finish their queued work and exit; kill those still running after
    ``timeout`` seconds (one deadline for all of them)."""
    for handle in handles:
        handle.alive = False
        handle.outbox.put(None)
    deadline = time.monotonic() + timeout
    for handle in handles:
        handle.process.join(max(0.0, deadline - time.monotonic()))
    for handle in handles:
        if handle.process.is_alive():
            handle.process.kill()
    for handle in handles:
        handle.process.join(REAP_SECONDS)
        if handle.sender is not None:
            handle.sender.join(REAP_SECONDS)
        handle.connection.close()

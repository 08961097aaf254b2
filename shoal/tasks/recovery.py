"""Failures: failing tasks and their dependents, replacing workers that died, and stopping
workers whose task ran past its timeout or was cancelled while running."""

from __future__ import annotations

import contextlib
import time

from shoal.tasks.errors import TaskTimeoutError, WorkerLostError
from shoal.tasks.graph import TaskNode, TaskState
from shoal.tasks.pool import WorkerHandle, start_worker
from shoal.tasks.state import RuntimeState

#: A task whose worker dies is run again once; the next death fails it.
MAX_ATTEMPTS = 2


class Recovery(RuntimeState):
    """Starts workers, replaces dead or stopped ones, and fails tasks with their error."""

    def _add_worker(self) -> WorkerHandle:
        handle = start_worker(
            next(self._indexes), self.job, self._blas_threads, self._send_failed, self._alive_reader
        )
        self._workers[handle.index] = handle
        self._generation += 1
        return handle

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
            orphaned_tasks = self._retire(handle)
            code = handle.process.exitcode
            if self._closed:
                return
            for node in orphaned_tasks:
                node.attempts += 1
                if node.attempts >= MAX_ATTEMPTS:
                    self._fail([node], WorkerLostError(
                        f"task {node.name} was running on {handle.description}, which died "
                        f"(exit code {code}); it had already been retried once after a worker died"
                    ))
                else:
                    self._requeue(node)
            self._refill()
        self._wake_receiver()

    def _stop_worker_for(self, handle: WorkerHandle, errors: dict[TaskNode, BaseException]) -> None:
        """Kill ``handle``'s worker to end the tasks in ``errors`` (which fail with those
        errors); the other tasks it had queued run elsewhere, as if never sent. Hold the lock."""
        if not handle.alive or self._closed:
            return
        handle.process.kill()
        queued = self._retire(handle)
        for node, error in errors.items():
            self._fail([node], error)
        if not self._closed:
            for node in queued:
                if node not in errors:
                    self._requeue(node)
            self._refill()
        self._wake_receiver()

    def _retire(self, handle: WorkerHandle) -> list[TaskNode]:
        """Forget a dead (or killed) worker; returns the tasks it had in flight."""
        handle.alive = False
        self._workers.pop(handle.index, None)
        self._generation += 1
        handle.process.join(1.0)
        handle.outbox.put(None)
        nodes = handle.remove_all()
        for node in nodes:
            self._running_timed.pop(node, None)
            node.deadline = None
        return nodes

    def _requeue(self, node: TaskNode) -> None:
        node.state = TaskState.READY
        self._ready.appendleft(node)

    def _refill(self) -> None:
        """Start a worker in place of a retired one and hand out the ready tasks."""
        replacement = self._add_worker()
        self._fill(replacement)
        for other in list(self._workers.values()):
            self._fill(other)
        self._changed.notify_all()

    def _wake_receiver(self) -> None:
        with contextlib.suppress(OSError):
            self._wake_writer.send_bytes(b"")

    # timeouts ----------------------------------------------------------------------------------
    def _started(self, handle: WorkerHandle, task_id: int) -> None:
        """A task with a timeout started on ``handle``: its clock runs from now."""
        entry = handle.in_flight.get(task_id)
        if entry is None:
            return
        node = entry[0]
        if node.state is TaskState.RUNNING and node.timeout is not None:
            node.deadline = time.monotonic() + node.timeout
            self._running_timed[node] = handle

    def _expire_overdue(self) -> None:
        """Replace the worker of every task that ran past its timeout; fail those tasks."""
        with self._lock:
            now = time.monotonic()
            overdue: dict[WorkerHandle, dict[TaskNode, BaseException]] = {}
            for node, handle in self._running_timed.items():
                if node.deadline is not None and node.deadline <= now:
                    assert node.timeout is not None
                    ran = now - node.deadline + node.timeout
                    overdue.setdefault(handle, {})[node] = TaskTimeoutError(
                        f"task {node.name} ran longer than its timeout of {node.timeout:g} s "
                        f"(stopped after {ran:.1f} s) on {handle.description}, which was replaced"
                    )
            for handle, errors in overdue.items():
                self._stop_worker_for(handle, errors)

"""Failures: failing tasks and their dependents, and replacing workers that died."""

from __future__ import annotations

import contextlib

from shoal.tasks.errors import WorkerLostError
from shoal.tasks.graph import TaskNode, TaskState
from shoal.tasks.pool import WorkerHandle, start_worker
from shoal.tasks.state import RuntimeState

#: A task whose worker dies is run again once; the next death fails it.
MAX_ATTEMPTS = 2


class Recovery(RuntimeState):
    """Starts workers, replaces dead ones, and fails tasks (transitively) with their error."""

    def _add_worker(self) -> WorkerHandle:
        handle = start_worker(next(self._indexes), self.job, self._blas_threads, self._send_failed)
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

"""Errors and warnings of the task runtime."""

from __future__ import annotations

import concurrent.futures


class TaskDependencyError(RuntimeError):
    """A task could not run because a task producing one of its inputs failed."""


class WorkerLostError(RuntimeError):
    """The worker process running a task died, also on the retry."""


class RuntimeShutdownError(RuntimeError):
    """The task runtime was shut down before the task finished."""


class TaskTimeoutError(TimeoutError):
    """A task ran longer than its ``timeout=``; the worker running it was replaced."""


class TaskCancelledError(concurrent.futures.CancelledError):
    """The task was cancelled with ``Future.cancel()`` before it finished."""


class RemoteTraceback(Exception):
    """The traceback of an exception raised inside a worker, as text."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text

    def __str__(self) -> str:
        return f"\n\"\"\"\n{self.text}\"\"\""


class SharedMemoryFallbackWarning(UserWarning):
    """An array could not be placed in shared memory and was sent by value instead."""

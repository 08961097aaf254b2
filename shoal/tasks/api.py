"""The process-wide task runtime and the functions that act on it."""

from __future__ import annotations

import threading

from shoal.tasks.future import Future
from shoal.tasks.runtime import Runtime

_runtime: Runtime | None = None
_lock = threading.Lock()


def start(workers: int | None = None, auto_share: bool = True) -> Runtime:
    """Start (or restart) the task runtime with ``workers`` processes (default: the cores)."""
    global _runtime
    with _lock:
        if _runtime is not None:
            _runtime.shutdown()
        _runtime = Runtime(workers, auto_share)
        return _runtime


def get_runtime() -> Runtime:
    """The running task runtime, started with default settings on first use."""
    global _runtime
    runtime = _runtime
    if runtime is not None:
        return runtime
    with _lock:
        if _runtime is None:
            _runtime = Runtime()
        return _runtime


def shutdown(timeout: float = 10.0) -> None:
    """Stop the workers and release all shared memory (also done at exit).

    Workers finish the task they are running for up to ``timeout`` seconds, then are killed.
    """
    global _runtime
    with _lock:
        if _runtime is not None:
            _runtime.shutdown(timeout)
            _runtime = None


def wait_on(value: object, timeout: float | None = None) -> object:
    """The value of a future, of data written by tasks, or of a list/tuple of those.

    With ``timeout`` (seconds), raises ``TimeoutError`` if the values are not all ready by
    then; the tasks go on running (cancel them with ``Future.cancel()``).
    """
    if isinstance(value, Future):
        return value._runtime.wait_on(value, timeout)
    if _runtime is None:
        if isinstance(value, list | tuple):
            return type(value)(wait_on(item, timeout) for item in value)
        return value
    return _runtime.wait_on(value, timeout)


def barrier() -> None:
    """Wait until every submitted task has finished."""
    if _runtime is not None:
        _runtime.barrier()


def delete(value: object) -> None:
    """Release data passed to tasks (or a future's value) and its shared-memory segments."""
    if isinstance(value, Future):
        value._runtime.delete(value)
    elif _runtime is not None:
        _runtime.delete(value)

"""Task runtime: ``@task`` with data directions, versioned data, worker processes and
system-wide shared memory for recurrently read arrays (paper 001)."""

from shoal.tasks.api import barrier, delete, get_runtime, shutdown, start, wait_on
from shoal.tasks.decorator import TaskFunction, task
from shoal.tasks.directions import IN, INOUT, OUT, Direction
from shoal.tasks.errors import (
    RemoteTraceback,
    RuntimeShutdownError,
    SharedMemoryFallbackWarning,
    TaskCancelledError,
    TaskDependencyError,
    TaskTimeoutError,
    WorkerLostError,
)
from shoal.tasks.future import Future

__all__ = [
    "IN",
    "INOUT",
    "OUT",
    "Direction",
    "Future",
    "RemoteTraceback",
    "RuntimeShutdownError",
    "SharedMemoryFallbackWarning",
    "TaskCancelledError",
    "TaskDependencyError",
    "TaskFunction",
    "TaskTimeoutError",
    "WorkerLostError",
    "barrier",
    "delete",
    "get_runtime",
    "shutdown",
    "start",
    "task",
    "wait_on",
]

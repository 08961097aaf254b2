"""The state every part of the task runtime shares: the graph, the workers, the lock."""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Iterator
from multiprocessing.connection import Connection
from typing import TYPE_CHECKING

from shoal.tasks.graph import Graph, TaskNode, Version

if TYPE_CHECKING:
    from shoal.tasks.pool import WorkerHandle


class RuntimeState:
    """Fields of :class:`~shoal.tasks.runtime.Runtime` that its parts read and write.

    The runtime is one object built from parts (scheduling, placement in shared memory,
    receiving replies, recovery from lost workers, data release), each a class of its own
    file; every field below is guarded by ``_lock``.
    """

    auto_share: bool
    job: str
    _lock: threading.RLock
    _changed: threading.Condition
    _graph: Graph
    _ready: deque[TaskNode]
    _unfinished: int
    _segments: set[str]
    _closed: bool
    _workers: dict[int, WorkerHandle]
    _indexes: Iterator[int]  # indexes of workers yet to start
    _blas_threads: int  # BLAS threads per worker
    _generation: int  # bumped when the set of workers changes
    _seconds: dict[tuple[str, str], float]  # moving average run time per function
    _awaited: dict[Version, int]  # versions that wait_on callers are blocked on
    _running_timed: dict[TaskNode, WorkerHandle]  # started tasks with a timeout, and where
    _wake_reader: Connection
    _wake_writer: Connection
    _alive_reader: Connection  # given to every worker; it sees end-of-file when the main dies
    _alive_writer: Connection  # never written, closed once the workers are stopped

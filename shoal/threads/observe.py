"""Observe threads from /proc: which ones ran, and how many ran at once."""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

_TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


def _task_stat(pid: int, tid: str) -> list[str] | None:
    try:
        with open(f"/proc/{pid}/task/{tid}/stat") as stat:
            return stat.read().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None  # the thread ended meanwhile


def _tids(pid: int) -> list[str]:
    try:
        return os.listdir(f"/proc/{pid}/task")
    except OSError:
        return []


def thread_cpu_seconds(pid: int | None = None) -> dict[int, float]:
    """CPU seconds (user + system) used so far by each thread of ``pid`` (default: this process)."""
    pid = os.getpid() if pid is None else pid
    times: dict[int, float] = {}
    for tid in _tids(pid):
        fields = _task_stat(pid, tid)
        if fields is not None:
            times[int(tid)] = (int(fields[11]) + int(fields[12])) / _TICKS_PER_SECOND
    return times


def running_threads(pid: int | None = None, exclude: frozenset[int] = frozenset()) -> int:
    """Threads of ``pid`` in the running state (R) right now, except those in ``exclude``."""
    pid = os.getpid() if pid is None else pid
    count = 0
    for tid in _tids(pid):
        if int(tid) in exclude:
            continue
        fields = _task_stat(pid, tid)
        if fields is not None and fields[0] == "R":
            count += 1
    return count


@dataclass(frozen=True)
class ThreadObservation:
    """What a :class:`ThreadSampler` saw."""

    samples: int
    max_live: int
    max_running: int
    mean_running: float


class ThreadSampler:
    """Sample, in a background thread, the live and running threads of this process.

    The sampler's own thread is not counted.  Use as a context manager; the
    result is in ``observation`` afterwards.
    """

    def __init__(self, interval_s: float = 0.002) -> None:
        self.interval_s = interval_s
        self.observation: ThreadObservation | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="shoal-thread-sampler", daemon=True)
        self._live: list[int] = []
        self._running: list[int] = []

    def _sample(self) -> None:
        me = frozenset({threading.get_native_id()})
        pid = os.getpid()
        while not self._stop.is_set():
            self._live.append(len(_tids(pid)) - 1)
            self._running.append(running_threads(pid, exclude=me))
            self._stop.wait(self.interval_s)

    def __enter__(self) -> ThreadSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()
        samples = len(self._running)
        self.observation = ThreadObservation(
            samples=samples,
            max_live=max(self._live, default=0),
            max_running=max(self._running, default=0),
            mean_running=sum(self._running) / samples if samples else 0.0,
        )

"""Observe threads from /proc: which ones ran, and how many ran at once."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
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
    return len(_running_tids(pid, exclude))


def _running_tids(pid: int, exclude: frozenset[int]) -> set[int]:
    running = set()
    for tid in _tids(pid):
        if int(tid) in exclude:
            continue
        fields = _task_stat(pid, tid)
        if fields is not None and fields[0] == "R":
            running.add(int(tid))
    return running


def _percentile(values: list[int], share: float) -> int:
    if not values:
        return 0
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


@dataclass(frozen=True)
class ThreadObservation:
    """What a :class:`ThreadSampler` saw; "inner threads" counts nested parallelism.

    Each sample counts the Python threads running (state R) and multiplies them
    by the library threads a call would use at that moment: the threads the
    running calls occupy or spin with.  ``running_helpers`` are threads not
    started by Python (BLAS/OpenMP pools) seen running.
    """

    samples: int
    max_live: int
    max_running: int
    mean_running: float
    max_running_helpers: int
    max_inner_threads: int
    p95_inner_threads: int


class ThreadSampler:
    """Sample, in a background thread, the live and running threads of this process.

    ``threads_per_call`` (default: always 1) gives the library threads a call
    started now would use; it is read at every sample.  ``callers`` (default:
    every Python thread) are the native ids of the threads whose running counts
    towards inner threads, so that a pool's bookkeeping threads waking up are not
    taken for callers.  The sampler's own thread is not counted.  Use as a
    context manager; the result is in ``observation``.
    """

    def __init__(
        self,
        interval_s: float = 0.002,
        threads_per_call: Callable[[], int] | None = None,
        callers: Iterable[int] | None = None,
    ) -> None:
        self.interval_s = interval_s
        self._callers = None if callers is None else frozenset(callers)
        self.observation: ThreadObservation | None = None
        self._threads_per_call = threads_per_call or (lambda: 1)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="shoal-thread-sampler", daemon=True)
        self._live: list[int] = []
        self._running: list[tuple[set[int], int]] = []
        self._python_threads: set[int] = set()

    def _sample(self) -> None:
        me = frozenset({threading.get_native_id()})
        pid = os.getpid()
        while not self._stop.is_set():
            self._live.append(len(_tids(pid)) - 1)
            self._running.append((_running_tids(pid, exclude=me), self._threads_per_call()))
            self._note_python_threads()
            self._stop.wait(self.interval_s)

    def _note_python_threads(self) -> None:
        # Kept for the whole run and applied at the end, so that a thread caught
        # while it starts or ends is never taken for a library helper.
        self._python_threads.update(thread.native_id for thread in threading.enumerate())

    def __enter__(self) -> ThreadSampler:
        self._note_python_threads()
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()
        self._note_python_threads()
        python = self._python_threads
        running = [len(tids) for tids, _ in self._running]
        callers = python if self._callers is None else python & self._callers
        inner = [len(tids & callers) * per_call for tids, per_call in self._running]
        samples = len(running)
        self.observation = ThreadObservation(
            samples=samples,
            max_live=max(self._live, default=0),
            max_running=max(running, default=0),
            mean_running=sum(running) / samples if samples else 0.0,
            max_running_helpers=max((len(tids - python) for tids, _ in self._running), default=0),
            max_inner_threads=max(inner, default=0),
            p95_inner_threads=_percentile(inner, 0.95),
        )

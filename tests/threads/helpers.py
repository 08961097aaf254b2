"""Observing BLAS threads in tests: which threads burnt CPU during some work."""

from __future__ import annotations

import threading
import time

import numpy as np

from shoal.threads.observe import thread_cpu_seconds


def busy_other_threads(work, share: float = 0.4) -> int:
    """How many threads not started by Python computed alongside the caller while ``work()`` ran:
    those that used at least ``share`` of the caller's CPU time (see :func:`_library_cpu`)."""
    used, mine = _library_cpu(work)
    return sum(1 for seconds in used.values() if seconds >= share * mine)


def matmul_work(size: int = 1200, repeats: int = 6):
    """A BLAS-heavy job that OpenBLAS splits over all its threads."""
    a = np.random.default_rng(0).random((size, size))

    def work() -> None:
        for _ in range(repeats):
            a @ a

    return work


def settle_library_threads(window_s: float = 0.1, timeout_s: float = 5.0) -> None:
    """Wait until no thread outside Python's own burns CPU for a whole ``window_s``.

    OpenBLAS helpers spin for a while after work; on a loaded machine that takes longer in wall
    time, so a fixed pause is not enough. Gives up after ``timeout_s`` (the test then decides).
    """
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        python_threads = {thread.native_id for thread in threading.enumerate()}
        before = thread_cpu_seconds()
        threading.Event().wait(window_s)
        after = thread_cpu_seconds()
        if all(seconds - before.get(tid, 0.0) < 0.2 * window_s for tid, seconds in after.items() if tid not in python_threads):
            return


def busy_library_threads(work, min_cpu_s: float = 0.05) -> int:
    """How many threads not started by Python (BLAS/OpenMP helpers) used at least ``min_cpu_s``
    of CPU time while ``work()`` ran (see :func:`_library_cpu`)."""
    used, _ = _library_cpu(work)
    return sum(1 for seconds in used.values() if seconds >= min_cpu_s)


def _library_cpu(work) -> tuple[dict[int, float], float]:
    """CPU seconds that each thread not started by Python used while ``work()`` ran, and the
    caller's. Settles first, so that OpenBLAS helpers spinning down after earlier work are idle;
    threads Python started (another test's pool winding down) are not library helpers."""
    settle_library_threads()
    me = threading.get_native_id()
    before = thread_cpu_seconds()
    work()
    after = thread_cpu_seconds()
    python_threads = {thread.native_id for thread in threading.enumerate()}
    used = {tid: seconds - before.get(tid, 0.0) for tid, seconds in after.items() if tid not in python_threads}
    return used, after[me] - before.get(me, 0.0)

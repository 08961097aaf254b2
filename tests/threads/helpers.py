"""Observing BLAS threads in tests: which threads burnt CPU during some work."""

from __future__ import annotations

import threading

import numpy as np

from shoal.threads.observe import thread_cpu_seconds


def busy_other_threads(work, share: float = 0.4) -> int:
    """How many other threads computed alongside the caller while ``work()`` ran.

    A thread counts when it used at least ``share`` of the caller's CPU time: an
    OpenBLAS helper that only spins down after earlier work stays below that.
    """
    me = threading.get_native_id()
    before = thread_cpu_seconds()
    work()
    after = thread_cpu_seconds()
    used = {tid: seconds - before.get(tid, 0.0) for tid, seconds in after.items()}
    threshold = share * used[me]
    return sum(1 for tid, seconds in used.items() if tid != me and seconds >= threshold)


def matmul_work(size: int = 1200, repeats: int = 6):
    """A BLAS-heavy job that OpenBLAS splits over all its threads."""
    a = np.random.default_rng(0).random((size, size))

    def work() -> None:
        for _ in range(repeats):
            a @ a

    return work

"""The four workloads of paper 002 §3, scaled to a small machine; run by threads_composability.

Usage: python benchmarks/threads_workloads.py [--cutoff S] [WORKLOAD ...]
Prints one JSON line per workload: its seconds and the threads observed.  A workload
still running after the cut-off is reported with what was seen so far, and ends the program.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from functools import partial
from multiprocessing.pool import ThreadPool

import numpy as np

from shoal.threads.libraries import library_threads
from shoal.threads.observe import ThreadSampler

POOL_WORKERS = 8
EIG_SIZE = 256
EIG_MATRICES = 16
QR_SHAPE = (40_000, 256)
QR_CHUNK_ROWS = 5_000
MATMUL_SIZE = 768


def balanced_eig() -> None:
    """ThreadPool(8) mapping np.linalg.eig over 256x256 matrices (paper §3.2)."""
    x = np.random.default_rng(0).random((EIG_SIZE, EIG_SIZE))
    with ThreadPool(POOL_WORKERS) as pool:
        pool.map(np.linalg.eig, [x] * EIG_MATRICES)


def _qr_check(x, **compute_options) -> None:
    import dask.array as da

    q, r = da.linalg.qr(x)
    assert da.all(da.isclose(x, q.dot(r))).compute(**compute_options)


def balanced_qr() -> None:
    """Dask QR of a tall matrix in equal chunks, checked by Q @ R (paper §3.1)."""
    import dask.array as da

    _qr_check(da.random.default_rng(0).random(QR_SHAPE, chunks=(QR_CHUNK_ROWS, QR_SHAPE[1])))


def unbalanced_qr() -> None:
    """Three stages: one chunk, then half the pool's chunks, then the whole pool's (paper §3.3)."""
    import dask.array as da

    rng = da.random.default_rng(0)
    for chunks in (1, POOL_WORKERS // 2, POOL_WORKERS):
        x = rng.random(QR_SHAPE, chunks=(QR_SHAPE[0] // chunks, QR_SHAPE[1]))
        _qr_check(x, num_workers=POOL_WORKERS)


def unbalanced_eig() -> None:
    """Three stages in one ThreadPool(8): one worker multiplies, then half, then all run eig (§3.4)."""
    rng = np.random.default_rng(0)
    x = rng.random((EIG_SIZE, EIG_SIZE))
    y = rng.random((MATMUL_SIZE, MATMUL_SIZE))
    with ThreadPool(POOL_WORKERS) as pool:
        pool.map(partial(np.matmul, y), [y] * 6, 6)
        pool.map(np.linalg.eig, [x] * EIG_MATRICES, EIG_MATRICES // (POOL_WORKERS // 2))
        pool.map(np.linalg.eig, [x] * EIG_MATRICES, EIG_MATRICES // POOL_WORKERS)


WORKLOADS = {
    "balanced eig": balanced_eig,
    "balanced QR (Dask)": balanced_qr,
    "unbalanced eig": unbalanced_eig,
    "unbalanced QR (Dask)": unbalanced_qr,
}


def _warm_up(settle_s: float = 0.3) -> None:
    import dask.array  # noqa: F401

    np.linalg.eig(np.eye(EIG_SIZE))
    time.sleep(settle_s)  # OpenBLAS helpers spinning after the warm-up go idle


class _Report:
    """Prints one workload's record once: when it ends, or at the cut-off, whichever comes first."""

    def __init__(self, name: str, sampler: ThreadSampler) -> None:
        self.name = name
        self.sampler = sampler
        self.start = time.perf_counter()
        self._lock = threading.Lock()
        self._printed = False

    def finish(self, cut_off: bool) -> None:
        with self._lock:
            if self._printed:
                return
            self._printed = True
            seconds = time.perf_counter() - self.start
            self.sampler.__exit__(None, None, None)
            observed = self.sampler.observation
            print(json.dumps({
                "workload": self.name,
                "seconds": seconds,
                "cut_off": cut_off,
                "max_running": observed.max_running,
                "mean_running": observed.mean_running,
                "max_live": observed.max_live,
                "max_running_helpers": observed.max_running_helpers,
                "max_inner_threads": observed.max_inner_threads,
                "p95_inner_threads": observed.p95_inner_threads,
            }), flush=True)  # fmt: skip
        if cut_off:
            os._exit(0)  # the workload's threads cannot be stopped


def main(arguments: list[str]) -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("workloads", nargs="*", help=f"any of {', '.join(WORKLOADS)} (default: all)")
    options.add_argument("--cutoff", type=float, default=None, help="stop after this many seconds")
    parsed = options.parse_args(arguments)
    unknown = [name for name in parsed.workloads if name not in WORKLOADS]
    if unknown:
        options.error(f"unknown workloads {unknown}; choose from {list(WORKLOADS)}")
    _warm_up()
    for name in parsed.workloads or list(WORKLOADS):
        # The workload runs in the main thread: Dask sizes its pool differently elsewhere.
        report = _Report(name, ThreadSampler(interval_s=0.005, threads_per_call=library_threads).__enter__())
        watchdog = threading.Timer(parsed.cutoff, report.finish, (True,)) if parsed.cutoff else None
        if watchdog is not None:
            watchdog.daemon = True
            watchdog.start()
        WORKLOADS[name]()
        report.finish(cut_off=False)
        if watchdog is not None:
            watchdog.cancel()


if __name__ == "__main__":
    main(sys.argv[1:])

"""The four workloads of paper 002 §3, scaled to a small machine; run by threads_composability.

Usage: python benchmarks/threads_workloads.py [WORKLOAD ...]
Prints one JSON line per workload: seconds of the last repetition and the threads observed.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from functools import partial
from multiprocessing.pool import ThreadPool

import numpy as np

from shoal.threads.libraries import library_threads
from shoal.threads.observe import ThreadSampler, thread_cpu_seconds

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


def _library_threads_that_ran(before: dict[int, float], min_cpu_s: float = 0.05) -> int:
    python_threads = {thread.native_id for thread in threading.enumerate()}
    return sum(
        1
        for tid, seconds in thread_cpu_seconds().items()
        if tid not in python_threads and seconds - before.get(tid, 0.0) >= min_cpu_s
    )


def _warm_up() -> None:
    import dask.array  # noqa: F401

    np.linalg.eig(np.eye(EIG_SIZE))


def main(names: list[str]) -> None:
    _warm_up()
    for name in names or list(WORKLOADS):
        workload = WORKLOADS[name]
        before = thread_cpu_seconds()
        with ThreadSampler(interval_s=0.005, threads_per_call=library_threads) as sampler:
            start = time.perf_counter()
            workload()
            seconds = time.perf_counter() - start
        observed = sampler.observation
        print(json.dumps({
            "workload": name,
            "seconds": seconds,
            "max_running": observed.max_running,
            "mean_running": observed.mean_running,
            "max_live": observed.max_live,
            "max_running_helpers": observed.max_running_helpers,
            "max_inner_threads": observed.max_inner_threads,
            "p95_inner_threads": observed.p95_inner_threads,
            "library_threads_ran": _library_threads_that_ran(before),
        }), flush=True)  # fmt: skip


if __name__ == "__main__":
    main(sys.argv[1:])

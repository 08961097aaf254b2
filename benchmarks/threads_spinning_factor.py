"""Does an oversubscription factor above 1 help thread workers that share OpenBLAS's pool?

Run by hand: ``.venv/bin/python -m benchmarks.threads_spinning_factor [--repeats N]``.
Thread workers share one process-wide BLAS setting.  On a machine with ``cores``
cores and ``cores`` workers, factor 1 gives each worker 1 BLAS thread and
factor 2 gives each ``2``; this runs both settings alternately, in one process,
on a balanced pool (every worker busy), on Dask's threaded scheduler, and on an
unbalanced pool (one worker busy), and prints median seconds.
"""

from __future__ import annotations

import argparse
import statistics
import threading
import time
from multiprocessing.pool import ThreadPool

import numpy as np

from shoal.threads import available_cores, limit_library_threads, threads_per_worker

EIG_SIZE = 256
EIG_MATRICES = 16
MATMUL_SIZE = 1000


def balanced_eig(workers: int) -> None:
    x = np.random.default_rng(0).random((EIG_SIZE, EIG_SIZE))
    with ThreadPool(workers) as pool:
        pool.map(np.linalg.eig, [x] * EIG_MATRICES)


def one_busy_worker(workers: int) -> None:
    y = np.random.default_rng(0).random((MATMUL_SIZE, MATMUL_SIZE))
    with ThreadPool(workers) as pool:
        pool.map(lambda a: [a @ a for _ in range(4)], [y], 1)


def dask_qr(workers: int) -> None:
    import dask.array as da

    x = da.random.default_rng(0).random((40_000, 256), chunks=(5_000, 256))
    q, r = da.linalg.qr(x)
    (q.dot(r) - x).max().compute(num_workers=workers)


WORKLOADS = {"balanced eig": balanced_eig, "balanced QR (Dask)": dask_qr, "one busy worker (matmul)": one_busy_worker}


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--repeats", type=int, default=3)
    repeats = options.parse_args().repeats
    cores = available_cores()
    settings = tuple(threads_per_worker(cores, factor, cores) for factor in (1.0, 2.0))
    seconds: dict[tuple[str, int], list[float]] = {}
    for _ in range(repeats):
        for name, workload in WORKLOADS.items():
            for threads in settings:
                with limit_library_threads(threads):
                    threading.Event().wait(0.2)  # helpers spinning from the previous run go idle
                    start = time.perf_counter()
                    workload(cores)
                    seconds.setdefault((name, threads), []).append(time.perf_counter() - start)
    print(f"cores: {cores}, thread workers: {cores}, repetitions: {repeats}")
    print(f"| workload | factor 1 ({settings[0]} BLAS threads/worker), s | factor 2 ({settings[1]}), s | f2 / f1 |")
    print("|---|---:|---:|---:|")
    for name in WORKLOADS:
        one, two = (statistics.median(seconds[(name, threads)]) for threads in settings)
        print(f"| {name} | {one:.3f} | {two:.3f} | {two / one:.2f} |")


if __name__ == "__main__":
    main()

"""Empty-task throughput (tasks/s): Shoal tasks vs ProcessPoolExecutor vs Dask distributed.

    .venv/bin/python -m benchmarks.tasks_throughput [--tasks 5000] [--reps 5]
"""

from __future__ import annotations

import argparse
import concurrent.futures
import logging
import statistics
import time

import shoal.tasks as tasks
from shoal.threads import available_cores


def empty() -> None:
    return None


empty_task = tasks.task(empty)


def run_shoal(count: int) -> float:
    start = time.perf_counter()
    futures = [empty_task() for _ in range(count)]
    tasks.barrier()
    del futures
    return count / (time.perf_counter() - start)


def run_pool(pool: concurrent.futures.ProcessPoolExecutor, count: int) -> float:
    start = time.perf_counter()
    futures = [pool.submit(empty) for _ in range(count)]
    concurrent.futures.wait(futures)
    return count / (time.perf_counter() - start)


def run_dask(workers: int, count: int) -> float:
    """One Dask measurement on a cluster of its own, closed before the others run again.

    Dask's scheduler runs on threads of this process: left running beside the other
    runtimes, it would take GIL time from their main-process threads.
    """
    from dask.distributed import Client, LocalCluster, wait

    with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, silence_logs=logging.CRITICAL) as cluster, Client(cluster) as client:
        wait([client.submit(empty, pure=False) for _ in range(200)])  # warm up
        start = time.perf_counter()
        futures = [client.submit(empty, pure=False) for _ in range(count)]
        wait(futures)
        return count / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tasks", type=int, default=5000)
    parser.add_argument("--reps", type=int, default=5)
    args = parser.parse_args()
    workers = available_cores()
    tasks.start(workers)
    pool = concurrent.futures.ProcessPoolExecutor(workers)
    rates: dict[str, list[float]] = {"shoal": [], "ProcessPoolExecutor": [], "dask distributed": []}
    run_shoal(200), run_pool(pool, 200)  # warm up
    for _ in range(args.reps):
        rates["shoal"].append(run_shoal(args.tasks))
        rates["ProcessPoolExecutor"].append(run_pool(pool, args.tasks))
        rates["dask distributed"].append(run_dask(workers, args.tasks))
    pool.shutdown()
    tasks.shutdown()
    shoal_median = statistics.median(rates["shoal"])
    print(f"empty tasks, {args.tasks} per run, {workers} workers, {args.reps} alternating repetitions")
    print("| runtime | median tasks/s | min | max | Shoal / this |\n|---|---|---|---|---|")
    for name, values in rates.items():
        median = statistics.median(values)
        print(f"| {name} | {median:,.0f} | {min(values):,.0f} | {max(values):,.0f} | {shoal_median / median:.2f}x |")


if __name__ == "__main__":
    main()

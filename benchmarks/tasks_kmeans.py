"""K-means over fragments (paper 001 Algorithm 1): RRO off / on / automatic, and Dask.

    .venv/bin/python -m benchmarks.tasks_kmeans [--points-log2 18] [--dims 8 32 128] [--reps 5]

Each repetition runs every mode once, alternating; the table compares each mode with
RRO off (A = the mode, B = off) like paper 001 Table I.
"""

from __future__ import annotations

import argparse
import logging
import time

import numpy as np

import shoal.tasks as tasks
from benchmarks.tasks_stats import TABLE_HEADER, table_row
from shoal.tasks import IN, task, wait_on

CENTERS = 4
ITERATIONS = 20
FRAGMENTS = 16


def partial_sum(fragment: np.ndarray, centers: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sums and counts of the points of one fragment closest to each centre."""
    distances = (centers**2).sum(axis=1) - 2.0 * fragment @ centers.T
    labels = distances.argmin(axis=1)
    counts = np.bincount(labels, minlength=len(centers)).astype(np.float64)
    sums = np.stack([fragment[labels == j].sum(axis=0) for j in range(len(centers))])
    return sums, counts


cluster_partial_sum = task(returns=2)(partial_sum)
cluster_partial_sum_rro = task(returns=2, fragment={"direction": IN, "rro": True})(partial_sum)


def kmeans(fragments: list[np.ndarray], centers: np.ndarray, step) -> np.ndarray:
    """Algorithm 1 without the early exit, so every mode runs all iterations."""
    for _ in range(ITERATIONS):
        results = [step(fragment, centers) for fragment in fragments]
        gathered = wait_on([value for pair in results for value in pair])
        sums = sum(gathered[0::2])
        counts = sum(gathered[1::2])
        centers = sums / np.maximum(counts, 1.0)[:, None]
    return centers


def _run_shoal(mode: str, fragments: list[np.ndarray], centers: np.ndarray) -> tuple[float, np.ndarray]:
    tasks.start(auto_share=(mode == "auto"))
    try:
        step = cluster_partial_sum_rro if mode == "on" else cluster_partial_sum
        start = time.perf_counter()
        result = kmeans(fragments, centers, step)
        return time.perf_counter() - start, result
    finally:
        tasks.shutdown()


def _run_dask(fragments: list[np.ndarray], centers: np.ndarray) -> tuple[float, np.ndarray]:
    """Dask on a cluster of its own (its scheduler threads would otherwise run beside Shoal)."""
    from dask.distributed import Client, LocalCluster

    from shoal.threads import available_cores

    with (
        LocalCluster(n_workers=available_cores(), threads_per_worker=1, processes=True, silence_logs=logging.CRITICAL) as cluster,
        Client(cluster) as client,
    ):
        start = time.perf_counter()
        scattered = client.scatter(fragments)
        for _ in range(ITERATIONS):
            pairs = client.gather([client.submit(partial_sum, f, centers, pure=False) for f in scattered])
            sums = sum(p[0] for p in pairs)
            counts = sum(p[1] for p in pairs)
            centers = sums / np.maximum(counts, 1.0)[:, None]
        return time.perf_counter() - start, centers


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--points-log2", type=int, default=18)
    parser.add_argument("--dims", type=int, nargs="+", default=[8, 32, 128])
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--no-dask", action="store_true")
    args = parser.parse_args()
    modes = ["off", "on", "auto"] + ([] if args.no_dask else ["dask"])
    rows = []
    for dims in args.dims:
        rng = np.random.default_rng(dims)
        points = 1 << args.points_log2
        fragments = [rng.standard_normal((points // FRAGMENTS, dims)) for _ in range(FRAGMENTS)]
        centers = rng.standard_normal((CENTERS, dims))
        times: dict[str, list[float]] = {mode: [] for mode in modes}
        reference = None
        for _ in range(args.reps):
            for mode in modes:
                if mode == "dask":
                    elapsed, result = _run_dask(fragments, centers)
                else:
                    elapsed, result = _run_shoal(mode, fragments, centers)
                    for fragment in fragments:
                        fragment.flags.writeable = True
                reference = result if reference is None else reference
                np.testing.assert_allclose(result, reference, rtol=1e-9)
                times[mode].append(elapsed)
        size = f"2^{args.points_log2} x {dims} ({points * dims * 8 >> 20} MiB)"
        rows.append(table_row(f"{size}, RRO on vs off", times["on"], times["off"]))
        rows.append(table_row(f"{size}, auto vs off", times["auto"], times["off"]))
        rows.append(table_row(f"{size}, auto vs RRO on", times["auto"], times["on"]))
        if not args.no_dask:
            rows.append(table_row(f"{size}, RRO on vs Dask", times["on"], times["dask"]))
        print("\n".join(rows[-4:]), flush=True)
    print(f"\nk-means, {FRAGMENTS} fragments, {CENTERS} centres, {ITERATIONS} iterations, {args.reps} alternating repetitions")
    print(TABLE_HEADER)
    print("\n".join(rows))


if __name__ == "__main__":
    main()

"""python -m shoal.smp: thread and process pools get their budgets, observed from inside."""

from __future__ import annotations

import concurrent.futures
import multiprocessing
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from multiprocessing.pool import ThreadPool

import pytest
from threadpoolctl import threadpool_info

from shoal.threads import available_cores, library_threads, threads_per_worker
from shoal.threads.observe import ThreadSampler
from shoal.threads.smp import WorkerPlan, plan_for

from .helpers import busy_library_threads, busy_other_threads, matmul_work, settle_library_threads

pytestmark = pytest.mark.skipif(available_cores() < 2, reason="needs two cores")


def _blas_threads() -> int:
    return next(pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas")


def _observe_in_worker(_=None) -> tuple[int, int, tuple[int, ...], int]:
    """(pid, BLAS threads, affinity, helper threads that computed during a matmul)."""
    return os.getpid(), _blas_threads(), tuple(sorted(os.sched_getaffinity(0))), busy_other_threads(matmul_work(600, 4))


def test_plan_gives_each_worker_its_share_of_the_cores():
    plan = WorkerPlan(cpus=tuple(range(8)), workers=2, threads=4, factor=1.0)
    assert [plan.cpus_for(slot) for slot in range(2)] == [(0, 1, 2, 3), (4, 5, 6, 7)]
    crowded = WorkerPlan(cpus=(0, 1), workers=8, threads=1, factor=1.0)
    assert [crowded.cpus_for(slot)[0] for slot in range(8)] == [0, 0, 0, 0, 1, 1, 1, 1]
    assert plan_for(8, 1.0).threads == 1


def test_thread_pool_workers_run_blas_on_one_thread_and_the_limit_ends_with_the_pool(smp_installed):
    before = _blas_threads()
    work = matmul_work(600, 4)

    def eight_workers_multiply(pool) -> None:
        pool.map(lambda _: work(), range(16), chunksize=1)

    with ThreadPool(8) as unpatched:  # the control: OpenBLAS's helpers compute for the workers
        assert busy_library_threads(lambda: eight_workers_multiply(unpatched)) >= 1
    smp_installed(1.0)
    with ThreadPool(8) as pool:
        assert set(pool.map(lambda _: _blas_threads(), range(8), chunksize=1)) == {1}
        assert busy_library_threads(lambda: eight_workers_multiply(pool)) == 0
    assert _blas_threads() == before


def test_at_factor_two_thread_workers_share_a_spinning_blas_within_the_cores(smp_installed):
    cores = available_cores()
    assert threads_per_worker(cores, 2.0, cores) == 2  # what the formula alone would give each worker
    work = matmul_work(600, 4)
    smp_installed(2.0)
    with ThreadPool(cores) as pool:
        assert set(pool.map(lambda _: _blas_threads(), range(2 * cores), chunksize=1)) == {1}
        assert busy_library_threads(lambda: pool.map(lambda _: work(), range(2 * cores), chunksize=1)) == 0
        workers = _native_ids_of_workers(pool, cores)
        settle_library_threads()  # helpers spinning down after earlier work go idle
        with ThreadSampler(threads_per_call=library_threads, callers=workers) as sampler:
            pool.map(lambda _: work(), range(2 * cores), chunksize=1)
    assert sampler.observation.max_running_helpers == 0
    assert sampler.observation.p95_inner_threads <= cores


def _native_ids_of_workers(pool: ThreadPool, workers: int) -> set[int]:
    """Each worker's native thread id: the workers wait for each other, so every one takes a task."""
    all_started = threading.Barrier(workers)

    def own_id(_: int) -> int:
        all_started.wait(timeout=10)
        return threading.get_native_id()

    ids = set(pool.map(own_id, range(workers), chunksize=1))
    assert len(ids) == workers
    return ids


def test_executors_and_pools_of_different_sizes_never_exceed_their_budget(smp_installed):
    smp_installed(1.0)
    cores = available_cores()
    with concurrent.futures.ThreadPoolExecutor(1) as alone:
        assert alone.submit(_blas_threads).result() == min(cores, _blas_threads_default())
        with ThreadPool(8) as crowd:
            assert crowd.apply(_blas_threads) == 1
            assert alone.submit(_blas_threads).result() == 1  # never above the crowded pool's share
        assert alone.submit(_blas_threads).result() == cores


def _blas_threads_default() -> int:
    return len(os.sched_getaffinity(0))


def test_initializers_of_the_program_still_run(smp_installed):
    smp_installed(2.0)
    seen = []
    with ThreadPool(2, initializer=seen.append, initargs=("ran",)) as pool:
        pool.map(abs, range(4))
    assert seen == ["ran", "ran"]


@pytest.mark.full
@pytest.mark.parametrize("start_method", ["fork", "spawn"])
def test_process_workers_get_disjoint_masks_and_one_blas_thread(smp_installed, start_method):
    smp_installed(1.0)
    with multiprocessing.get_context(start_method).Pool(2) as pool:
        observed = _until_both_workers(pool)
    masks = [mask for _, _, mask, _ in observed.values()]
    assert sorted(masks) == [(0,), (1,)]
    assert {blas for _, blas, _, _ in observed.values()} == {1}


def _until_both_workers(pool, workers: int = 2, tries: int = 200) -> dict:
    observed: dict[int, tuple] = {}
    for _ in range(tries):
        for result in pool.map(_observe_in_worker, range(workers), chunksize=1):
            observed[result[0]] = result
        if len(observed) >= workers:
            return observed
    raise AssertionError(f"saw only {len(observed)} workers")


def _pid_after(seconds: float) -> int:
    time.sleep(seconds)
    return os.getpid()


@pytest.mark.full
def test_a_worker_that_replaces_a_killed_one_takes_its_share(smp_installed):
    smp_installed(1.0)
    with multiprocessing.get_context("fork").Pool(2) as pool:
        first = _until_both_workers(pool)
        # Kill a worker inside a task, never while it waits on the task queue's lock.
        busy = [pool.apply_async(_pid_after, (0.3,)), pool.apply_async(_pid_after, (60,))]
        survivor = busy[0].get(timeout=30)
        victim = next(pid for pid in first if pid != survivor)
        os.kill(victim, signal.SIGKILL)
        replacement_seen = None
        for _ in range(200):
            pid, blas, mask, _ = pool.apply_async(_observe_in_worker).get(timeout=30)
            if pid not in first:
                replacement_seen = (blas, mask)
                break
    assert replacement_seen == (1, first[victim][2])


@pytest.mark.full
def test_process_pool_executor_workers_get_disjoint_masks(smp_installed):
    smp_installed(1.0)
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=multiprocessing.get_context("fork")) as pool:
        observed = {}
        for _ in range(200):
            observed.update({r[0]: r for r in pool.map(_observe_in_worker, range(2))})
            if len(observed) == 2:
                break
    assert sorted(mask for _, _, mask, _ in observed.values()) == [(0,), (1,)]


_PROGRAM = textwrap.dedent(
    """
    import sys, numpy as np
    from multiprocessing.pool import ThreadPool
    from threadpoolctl import threadpool_info
    def blas(_):
        return threadpool_info()[0]["num_threads"]
    with ThreadPool(int(sys.argv[1])) as pool:
        print("argv", sys.argv[1:], "blas", sorted(set(pool.map(blas, range(8)))))
    sys.exit(int(sys.argv[2]))
    """
)


def _run_smp(tmp_path, *args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    program = tmp_path / "app.py"
    program.write_text(_PROGRAM)
    command = [sys.executable, "-m", "shoal.smp", *args]
    command = [part if part != "APP" else str(program) for part in command]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env={**os.environ, **(env or {})})


@pytest.mark.full
def test_the_launcher_runs_the_program_unchanged_with_budgets(tmp_path, semaphore_path):
    result = _run_smp(tmp_path, "-f", "1", "APP", "8", "3")
    assert result.returncode == 3, result.stderr
    assert result.stdout.strip() == "argv ['8', '3'] blas [1]"
    result = _run_smp(tmp_path, "APP", "1", "0", env={"SHOAL_COMPOSABILITY": "counting"})
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == f"argv ['1', '0'] blas [{available_cores()}]"


@pytest.mark.full
@pytest.mark.parametrize(
    ("args", "env", "message"),
    [
        (["-f", "0", "APP"], {}, "factor must be a positive number"),
        (["-f", "two", "APP"], {}, "factor must be a positive number"),
        (["missing.py"], {}, "no such program file"),
        (["APP"], {"SHOAL_COMPOSABILITY": "greedy"}, "SHOAL_COMPOSABILITY must be one of"),
    ],
)
def test_the_launcher_rejects_bad_input_clearly(tmp_path, args, env, message):
    result = _run_smp(tmp_path, *args, env=env)
    assert result.returncode == 2
    assert message in result.stderr

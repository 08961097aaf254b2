"""The node budget: the formula, the environment override, bad input."""

from __future__ import annotations

import os

import pytest

from shoal.threads import (
    Budget,
    available_cores,
    budget,
    node_cores,
    spinning_threads_per_worker,
    threads_per_worker,
)


@pytest.mark.parametrize(
    ("workers", "factor", "cores", "expected"),
    [(8, 1.0, 2, 1), (8, 2.0, 2, 1), (2, 1.0, 8, 4), (2, 2.0, 8, 8), (3, 1.0, 8, 2), (1, 2.0, 4, 8), (4, 1.5, 4, 1)],
)
def test_threads_per_worker_is_max_one_cores_over_workers_times_factor(workers, factor, cores, expected):
    assert threads_per_worker(workers, factor, cores) == expected


@pytest.mark.parametrize(
    ("workers", "factor", "cores", "expected"),
    [(2, 2.0, 2, 1), (1, 2.0, 2, 2), (2, 2.0, 8, 4), (8, 2.0, 2, 1), (3, 2.0, 8, 2), (4, 0.5, 8, 1)],
)
def test_spinning_pools_never_give_thread_workers_more_than_the_cores(workers, factor, cores, expected):
    assert spinning_threads_per_worker(workers, factor, cores) == expected
    assert workers * expected <= max(cores, workers)
    assert expected <= threads_per_worker(workers, factor, cores)


@pytest.mark.parametrize("workers", [0, -1, 1.5, True, "2"])
def test_threads_per_worker_rejects_bad_worker_counts(workers):
    with pytest.raises(ValueError, match="workers must be a positive integer"):
        threads_per_worker(workers, 1.0, 4)


@pytest.mark.parametrize("factor", [0, -2.0, float("nan")])
def test_threads_per_worker_rejects_bad_factors(factor):
    with pytest.raises(ValueError, match="factor must be positive"):
        threads_per_worker(2, factor, 4)


def test_budget_follows_the_affinity_mask():
    expected = len(os.sched_getaffinity(0))
    assert available_cores() == expected
    assert budget() == Budget(
        cores=expected,
        factor=1.0,
        engine_threads=expected,
        library_threads_per_engine_thread=1,
        task_workers=expected,
        library_threads_per_task_worker=1,
    )


def test_budget_follows_shoal_num_threads(monkeypatch):
    monkeypatch.setenv("SHOAL_NUM_THREADS", "6")
    assert node_cores() == 6
    assert budget(factor=2.0).library_threads_per_engine_thread == 2
    assert budget().engine_threads == 6


@pytest.mark.parametrize("value", ["zero", "0", "-3"])
def test_bad_shoal_num_threads_names_the_variable(monkeypatch, value):
    monkeypatch.setenv("SHOAL_NUM_THREADS", value)
    with pytest.raises(ValueError, match="SHOAL_NUM_THREADS"):
        budget()


def test_budget_is_frozen():
    with pytest.raises(AttributeError):
        budget().cores = 99

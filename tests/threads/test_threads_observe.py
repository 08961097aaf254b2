"""ThreadSampler: running threads, library helpers and inner threads, observed from /proc."""

from __future__ import annotations

import threading

import pytest

from shoal.threads import available_cores, library_threads, limit_library_threads
from shoal.threads.observe import ThreadSampler

from .helpers import matmul_work, settle_library_threads

pytestmark = pytest.mark.skipif(available_cores() < 2, reason="needs two cores to see BLAS threads")


def _in_threads(count: int, work) -> None:
    threads = [threading.Thread(target=work) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_python_threads_in_serial_blas_count_once_and_no_helper_runs():
    work = matmul_work(600, 6)
    settle_library_threads()  # helpers spinning down after earlier work go idle
    with limit_library_threads(1), ThreadSampler(threads_per_call=library_threads) as sampler:
        _in_threads(3, work)
    seen = sampler.observation
    assert seen.samples > 0
    assert seen.max_running_helpers == 0
    assert seen.max_inner_threads in (3, 4)  # three callers of one thread each, and the main thread at moments
    assert 3 <= seen.max_running <= 4  # plus, at moments, the main thread


def test_a_parallel_blas_call_shows_its_helpers_and_its_inner_threads():
    width = library_threads()
    with ThreadSampler(threads_per_call=library_threads) as sampler:
        _in_threads(1, matmul_work(1200, 6))
    seen = sampler.observation
    assert seen.max_running_helpers >= 1
    assert seen.max_inner_threads in (width, 2 * width)  # the caller, and the main thread at moments

"""parallel_region and the coordinated NumPy calls under SHOAL_COMPOSABILITY."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from shoal.threads import Mode, composability_mode, node_cores, parallel_region
from shoal.threads.coordination import (
    coordinated,
    install_call_regions,
    node_semaphore,
    tokens_for,
    uninstall_call_regions,
)


def test_mode_parsing(monkeypatch):
    monkeypatch.delenv("SHOAL_COMPOSABILITY", raising=False)
    assert composability_mode() is None
    monkeypatch.setenv("SHOAL_COMPOSABILITY", " Exclusive ")
    assert composability_mode() is Mode.EXCLUSIVE
    monkeypatch.setenv("SHOAL_COMPOSABILITY", "counting")
    assert composability_mode() is Mode.COUNTING
    monkeypatch.setenv("SHOAL_COMPOSABILITY", "sharing")
    with pytest.raises(ValueError, match="SHOAL_COMPOSABILITY must be one of exclusive, counting"):
        composability_mode()


def test_tokens_per_mode():
    assert tokens_for(Mode.EXCLUSIVE, 2, 8) == 8
    assert tokens_for(Mode.EXCLUSIVE, 1, 8) == 1
    assert tokens_for(Mode.COUNTING, 3, 8) == 3
    assert tokens_for(Mode.COUNTING, 30, 8) == 8


def test_regions_take_nothing_when_unset(semaphore_path, monkeypatch):
    monkeypatch.delenv("SHOAL_COMPOSABILITY", raising=False)
    with parallel_region(4) as held:
        assert held == 0
        assert node_semaphore().tokens_in_use() == 0


@pytest.mark.parametrize(("mode", "threads", "expected"), [("exclusive", 2, "all"), ("counting", 1, 1)])
def test_regions_hold_tokens_while_open(semaphore_path, monkeypatch, mode, threads, expected):
    monkeypatch.setenv("SHOAL_COMPOSABILITY", mode)
    expected = node_cores() if expected == "all" else expected
    with parallel_region(threads) as held:
        assert held == expected
        assert node_semaphore().tokens_in_use() == expected
        with parallel_region(threads) as nested:  # nested regions of a thread take nothing more
            assert nested == 0
            assert node_semaphore().tokens_in_use() == expected
    assert node_semaphore().tokens_in_use() == 0


def test_an_exception_inside_a_region_gives_the_tokens_back(semaphore_path, monkeypatch):
    monkeypatch.setenv("SHOAL_COMPOSABILITY", "exclusive")
    with pytest.raises(ZeroDivisionError), parallel_region(2):
        1 / 0  # noqa: B018
    assert node_semaphore().tokens_in_use() == 0


@pytest.mark.parametrize("bad", [0, -2, 1.5, "4"])
def test_bad_region_sizes_are_rejected(bad):
    with pytest.raises(ValueError, match="positive thread count"), parallel_region(bad):
        pass


@pytest.mark.parametrize(("mode", "threads", "limit"), [("exclusive", 2, 1), ("counting", 1, "cores")])
def test_observed_concurrency_stays_within_the_mode(semaphore_path, monkeypatch, mode, threads, limit):
    monkeypatch.setenv("SHOAL_COMPOSABILITY", mode)
    limit = node_cores() if limit == "cores" else limit
    active, peak, lock = [0], [0], threading.Lock()
    barrier = threading.Barrier(8)

    def worker() -> None:
        barrier.wait()
        for _ in range(10):
            with parallel_region(threads):
                with lock:
                    active[0] += 1
                    peak[0] = max(peak[0], active[0])
                threading.Event().wait(0.001)
                with lock:
                    active[0] -= 1

    workers = [threading.Thread(target=worker) for _ in range(8)]
    for thread in workers:
        thread.start()
    for thread in workers:
        thread.join()
    assert 1 <= peak[0] <= limit


def test_coordinated_calls_hold_tokens_only_for_large_arrays(semaphore_path, monkeypatch):
    monkeypatch.setenv("SHOAL_COMPOSABILITY", "counting")
    seen: list[int] = []
    probe = coordinated(lambda array: seen.append(node_semaphore().tokens_in_use()))
    probe(np.zeros((256, 256)))
    probe(np.zeros((4, 4)))
    assert seen[0] >= 1
    assert seen[1] == 0
    monkeypatch.delenv("SHOAL_COMPOSABILITY")
    probe(np.zeros((256, 256)))
    assert seen[2] == 0


def test_installed_call_regions_keep_numpy_answers(semaphore_path, monkeypatch):
    monkeypatch.setenv("SHOAL_COMPOSABILITY", "exclusive")
    matrix = np.random.default_rng(1).random((160, 160))
    expected_q, expected_r = np.linalg.qr(matrix)
    install_call_regions()
    try:
        assert getattr(np.linalg.qr, "__shoal_coordinated__", False)
        q, r = np.linalg.qr(matrix)
        np.testing.assert_array_equal(q, expected_q)
        np.testing.assert_array_equal(r, expected_r)
        with pytest.raises(np.linalg.LinAlgError):
            np.linalg.inv(np.zeros((200, 200)))
    finally:
        uninstall_call_regions()
    assert not getattr(np.linalg.qr, "__shoal_coordinated__", False)
    assert node_semaphore().tokens_in_use() == 0

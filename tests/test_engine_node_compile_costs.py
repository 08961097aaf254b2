"""The compile-cost estimate: measured in the worker, remembered next to the kernels."""

from __future__ import annotations

import json

import pytest

from shoal.engine.node.compile import costs as compile_costs
from shoal.engine.node.compile.costs import CompileCosts


def test_the_worker_start_up_is_charged_only_while_no_worker_runs():
    costs = CompileCosts()
    cold = costs.seconds(10, ring=False, worker_running=False)
    warm = costs.seconds(10, ring=False, worker_running=True)
    assert cold == pytest.approx(warm + costs.startup)
    assert warm == pytest.approx(costs.kernel + 10 * costs.per_step)


def test_defaults_follow_the_measured_kernels():
    """Measured in the worker: 1.0-1.4 s for 64 steps, 0.12-0.3 s for 1-5, 3.1 s for a ring."""
    costs = CompileCosts()
    assert 0.9 <= costs.kernel_seconds(64, ring=False) <= 1.4
    assert 0.1 <= costs.kernel_seconds(2, ring=False) <= 0.3
    assert 2.5 <= costs.kernel_seconds(6, ring=True) <= 3.6


def test_measurements_move_the_estimate_of_their_own_kind():
    costs = CompileCosts()
    flat, ring = costs.kernel_seconds(20, ring=False), costs.kernel_seconds(6, ring=True)
    for _ in range(10):
        costs.learn(20, ring=False, measured=flat / 4, started_worker=False)
    assert costs.kernel_seconds(20, ring=False) == pytest.approx(flat / 4, rel=0.01)
    assert costs.kernel_seconds(6, ring=True) == ring  # the other kind is left alone
    costs.learn(6, ring=True, measured=ring * 4, started_worker=False)
    assert ring < costs.kernel_seconds(6, ring=True) < ring * 4  # one measurement moves it part way


def test_a_request_that_started_the_worker_teaches_the_start_up():
    costs = CompileCosts()
    share = costs.kernel_seconds(2, ring=False)
    for _ in range(10):
        costs.learn(2, ring=False, measured=share + 2.0, started_worker=True)
    assert costs.startup == pytest.approx(2.0, rel=0.01)
    assert costs.flat_scale == 1.0


@pytest.mark.parametrize("measured", [0.0, -1.0, float("nan"), float("inf")])
def test_nonsense_measurements_are_ignored(measured):
    costs = CompileCosts()
    costs.learn(4, ring=False, measured=measured, started_worker=False)
    costs.learn(4, ring=False, measured=measured, started_worker=True)
    assert costs == CompileCosts()


def test_remembered_costs_survive_a_round_trip(tmp_path):
    costs = CompileCosts()
    costs.learn(30, ring=False, measured=5.0, started_worker=False)
    compile_costs.save(costs, tmp_path / "kernels")
    assert compile_costs.load(tmp_path / "kernels") == costs


@pytest.mark.parametrize(
    "text", ["", "not json", "[1, 2]", json.dumps({"startup": -1, "flat_scale": "x", "ring": float("nan")})]
)
def test_an_unreadable_or_odd_file_gives_the_defaults(tmp_path, text):
    (tmp_path / compile_costs.COSTS_FILE).write_text(text)
    assert compile_costs.load(tmp_path) == CompileCosts()


def test_a_missing_file_gives_the_defaults(tmp_path):
    assert compile_costs.load(tmp_path / "nowhere") == CompileCosts()


def test_a_cache_file_is_replaced_whole_and_a_failed_write_leaves_nothing(tmp_path):
    from shoal.engine.node.compile.cache_files import write_text_atomically

    target = tmp_path / "costs.json"
    write_text_atomically(target, "old\n")
    write_text_atomically(target, "new\n")
    assert target.read_text() == "new\n"
    blocked = tmp_path / "a folder"
    blocked.mkdir()
    (blocked / "inside").write_text("x")
    with pytest.raises(OSError):
        write_text_atomically(blocked, "text")  # a non-empty folder cannot be replaced by a file
    assert sorted(path.name for path in tmp_path.iterdir()) == ["a folder", "costs.json"]

"""Which batches a rank plans with redundant halo rows on a link that chose own rows: those
that repeat one in-place sweep (``shoal.cluster.link.repeats_a_sweep``)."""

from __future__ import annotations

import numpy as np
from engine_node_recorder import Recorder
from test_engine_node_differential import five_point_sweep

from shoal.cluster.link import repeats_a_sweep
from shoal.cluster.plan import PlanConfig, Planner

RNG = np.random.default_rng(5)


def sweeps(*targets: str) -> Recorder:
    """A batch of five-point sweeps of grid ``a`` or ``b`` into itself, in the order named."""
    rec = Recorder()
    grids = {"a": rec.array(RNG.random((12, 10))), "b": rec.array(RNG.random((12, 10)))}
    for name in targets:
        five_point_sweep(rec, grids[name], grids[name])
    return rec


def test_a_loop_of_one_sweep_repeats_it() -> None:
    assert repeats_a_sweep(sweeps("a", "a").batch)
    assert repeats_a_sweep(sweeps("b", "a", "a", "a").batch)


def test_one_sweep_or_sweeps_of_different_grids_alternating_do_not() -> None:
    assert not repeats_a_sweep(sweeps("a").batch)
    assert not repeats_a_sweep(sweeps("a", "b", "a", "b").batch)


def test_a_result_kept_between_two_sweeps_separates_them() -> None:
    rec = Recorder()
    grid = rec.array(RNG.random((12, 10)))
    five_point_sweep(rec, grid, grid)
    rec.ufunc("add", rec.array(RNG.random(4)), 1.0)  # not released: the batch writes it
    five_point_sweep(rec, grid, grid)
    assert not repeats_a_sweep(rec.batch)


def test_own_rows_turn_redundant_only_for_such_a_batch() -> None:
    planner = Planner(0, 2, PlanConfig(halo_rows=2, redundant_rows=False, redundant_for_sweeps=True), 1 << 20)
    planner.choose_rows(sweeps("a", "a").batch)
    assert planner.redundant_rows
    planner.choose_rows(sweeps("a", "b").batch)
    assert not planner.redundant_rows
    fixed = Planner(0, 2, PlanConfig(halo_rows=2, redundant_rows=False), 1 << 20)
    fixed.choose_rows(sweeps("a", "a").batch)
    assert not fixed.redundant_rows

"""Results left in another base's view instead of written out (``shoal.engine.node.plan.aliases``):
programs against NumPy itself, and which copies the planner makes aliases of."""

from __future__ import annotations

import os

import numpy
import pytest
from engine_node_harness import node_engine
from engine_node_recorder import Recorder

import shoal.numpy as snp
from shoal import runtime
from shoal.engine.node import NodeEngine
from shoal.engine.node.plan.plan import plan_batch

SIZE = 24


@pytest.fixture(params=[(7, "off"), (64, "off"), (1 << 16, "off"), pytest.param((64, "sync"), marks=pytest.mark.full)])
def node(request, monkeypatch):
    block, compile = request.param
    monkeypatch.setenv("SHOAL_BLOCK_SIZE", str(block))
    monkeypatch.setenv("SHOAL_COMPILE", compile)
    monkeypatch.setenv("SHOAL_DIRECT_WORK", "0")
    with runtime.configure(engine="node", eager_threshold=0) as rt:
        assert isinstance(rt.engine, NodeEngine)
        yield rt


def plate(np):
    grid = np.zeros((SIZE + 2, SIZE + 2))
    grid[:, 0] = -273.15
    grid[0, :] = 40.0
    grid[5:9, 4:20] = np.arange(64.0).reshape(4, 16)
    return grid


def sweep(np, grid):
    """One heat-equation sweep as its example writes it: a new array, a check, a copy back."""
    center = grid[1:-1, 1:-1]
    work = 0.2 * (center + grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:])
    delta = np.sum(np.abs(work - center)) / center.size
    center[:] = work
    return work, float(delta)  # the test that ends the batch comes after the copy


def both(program):
    """``program`` run on NumPy and on Shoal: pairs of (NumPy result, Shoal result)."""
    return list(zip(program(numpy), program(snp)))


def assert_equal_results(pairs):
    """Element-wise results exactly; sums to rounding (blocks add in another order)."""
    for expected, got in pairs:
        if isinstance(expected, list):
            assert got == pytest.approx(expected, rel=1e-12)
            continue
        got = numpy.asarray(got)
        if got.ndim:
            numpy.testing.assert_array_equal(got, expected)
        else:
            numpy.testing.assert_allclose(got, expected, rtol=1e-12)


def test_a_converging_loop_never_writes_its_work_array_out(node):
    def program(np):
        grid = plate(np)
        deltas = []
        for _ in range(4):
            work, delta = sweep(np, grid)
            deltas.append(delta)
        return grid, work, work[::3, 1::2], work.T[2], deltas

    pairs = both(program)
    stats = node.engine.last_stats
    assert stats.aliases == 1
    assert stats.compiled_block_ops > 0 or os.environ["SHOAL_COMPILE"] == "off"
    assert node.engine.live_bases() > 0
    assert_equal_results(pairs)


def test_sweeps_in_one_batch_leave_the_last_work_array_in_the_grid(node):
    def program(np):
        grid = plate(np)
        center = grid[1:-1, 1:-1]
        for _ in range(6):  # no read ends the batch: sweeps may share a pass over the grid
            work = 0.2 * (center + grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:])
            center[:] = work
        return grid, work

    assert_equal_results(both(program))  # the first fetch runs the whole program as one batch
    stats = node.engine.last_stats
    assert stats.aliases == 1
    assert stats.sweep_passes > 0 or os.environ["SHOAL_COMPILE"] == "off"


def test_a_sweep_batch_holds_the_grid_alone(node):
    grid = plate(snp)
    for _ in range(3):
        sweep(snp, grid)
    stats = node.engine.last_stats
    assert stats.aliases == 1
    assert stats.peak_bytes < 1.5 * grid.nbytes  # `work` (a grid's worth) never had memory


def test_results_kept_from_earlier_sweeps_keep_their_values(node):
    def program(np):
        grid = plate(np)
        kept = [sweep(np, grid)[0] for _ in range(4)]
        return [grid, *kept]

    assert_equal_results(both(program))


@pytest.mark.parametrize(
    "change",
    [
        lambda grid, work: work.__iadd__(1.5),
        lambda grid, work: grid.__imul__(3.0),
        lambda grid, work: grid[1:-1, 1:-1].__isub__(work),
        lambda grid, work: grid.__setitem__((slice(3, 5), slice(None)), 7.0),
    ],
    ids=["work", "grid", "grid-from-work", "part-of-grid"],
)
def test_a_later_change_to_either_side_keeps_the_other(node, change):
    def program(np):
        grid = plate(np)
        work, _ = sweep(np, grid)
        change(grid, work)
        return grid, work  # the grid is read first: its batch holds the change alone

    assert_equal_results(both(program))


def test_releasing_the_grid_first_leaves_the_work_array_its_values(node):
    def last_work(np):
        grid = plate(np)
        work, _ = sweep(np, grid)
        work, _ = sweep(np, grid)
        return work  # the grid dies here, while `work` lives on

    def program(np):
        work = last_work(np)
        return work, work * 2.0

    assert_equal_results(both(program))


def test_an_engine_told_to_release_the_grid_keeps_the_alias_values():
    rec = Recorder()
    program = copy_back()
    grid, work, _target = program(rec)
    expected = numpy.arange(100.0).reshape(10, 10)[1:-1, 1:-1] + 1.0
    engine = node_engine(block=7, threads=2)
    try:
        engine.execute(rec.new_batch())
        assert engine.last_stats.aliases == 1
        rec.release(grid)
        engine.execute(rec.new_batch())
        numpy.testing.assert_array_equal(engine.fetch(work), expected)
    finally:
        engine.shutdown()


def recorded(program):
    rec = Recorder()
    views = program(rec)
    return plan_batch(rec.batch, rec.known), views


def copy_back(dtype=numpy.float64, shift_source=False, after=None):
    """work = grid's center + 1; center[:] = work (or a cast, or part of work); then ``after``."""

    def program(rec):
        grid = rec.array(numpy.arange(100.0).reshape(10, 10))
        center = rec.index(grid, (slice(1, -1), slice(1, -1)))
        work = rec.ufunc("add", center, 1.0)
        target = center if dtype == numpy.float64 else rec.index(rec.empty((10, 10), dtype), (slice(1, -1), slice(1, -1)))
        source = rec.index(work, (slice(None), slice(0, 1))) if shift_source else work
        rec.copy(target, source)
        if after is not None:
            after(rec, grid)
        return grid, work, target

    return program


def test_a_copy_of_all_of_a_new_array_into_a_region_makes_it_an_alias():
    plan, (_grid, work, target) = recorded(copy_back())
    assert plan.aliases == {work.base: target}
    assert work.base in plan.temporaries


@pytest.mark.parametrize(
    "program",
    [
        copy_back(dtype=numpy.float32),
        copy_back(shift_source=True),
        copy_back(after=lambda rec, grid: rec.fill(rec.index(grid, (0,)), 2.0)),
        copy_back(after=lambda rec, grid: rec.release(grid)),
    ],
    ids=["cast", "part-of-work", "grid-written-later", "grid-released"],
)
def test_copies_that_do_not_leave_the_same_values_make_no_alias(program):
    plan, (_grid, work, _target) = recorded(program)
    assert plan.aliases == {}
    assert work.base not in plan.temporaries

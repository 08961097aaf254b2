"""Several in-place stencil sweeps per pass over memory (temporal blocking), against the reference."""

from __future__ import annotations

import numpy as np
import pytest
from engine_node_harness import against_the_reference, assert_same, run_both
from engine_node_recorder import Recorder
from hypothesis import given, settings
from hypothesis import strategies as st
from test_engine_node_deferred import UPDATES, heat_sweep, in_place_jacobi

from shoal.engine import ReferenceEngine
from shoal.engine.node import NodeConfig, NodeEngine
from shoal.engine.node.lower.program import lower
from shoal.engine.node.lower.sweeps import (
    chain_shrink,
    fused,
    shrunk_by,
    stencil_of,
    sweep_key,
    widened_reads,
)
from shoal.engine.node.plan.plan import Group, plan_batch

RNG = np.random.default_rng(23)


def repeated_update(rows: int, cols: int, shifts: list[tuple[int, int]], reverse: bool, sweeps: int):
    """``a[w] = a[w] * 0.5 + sum(a[w shifted by (dr, dc)])``, ``sweeps`` times in one batch, with
    the right-hand sides released (temporaries), optionally walking rows backwards."""

    def window(dr: int, dc: int) -> tuple[slice, slice]:
        columns = slice(2 + dc, 2 + dc + cols)
        if reverse:
            return slice(1 + dr + rows, 1 + dr if dr > -2 else None, -1), columns
        return slice(2 + dr, 2 + dr + rows), columns

    def program(rec: Recorder):
        a = rec.array(RNG.random((rows + 4, cols + 4)))
        for _ in range(sweeps):
            update(rec, a, window, shifts)
        return [a]

    return program


def update(rec: Recorder, a, window, shifts: list[tuple[int, int]]) -> None:
    """``a[window(0, 0)] = a[window(0, 0)] * 0.5 + sum(a[window(dr, dc)])``, temporaries released."""
    total = rec.ufunc("multiply", rec.index(a, window(0, 0)), 0.5)
    partials = [total]
    for dr, dc in shifts:
        total = rec.ufunc("add", total, rec.index(a, window(dr, dc)))
        partials.append(total)
    rec.copy(rec.index(a, window(0, 0)), total)
    rec.release(*partials)


def lowered_groups(program, block: int = 7) -> list:
    rec = Recorder()
    program(rec)
    plan = plan_batch(rec.batch, rec.known)
    return [lower(step, plan.temporaries, block) for step in plan.steps if isinstance(step, Group)]


def test_a_jacobi_sweep_is_a_stencil_of_five_shifts_and_consecutive_sweeps_are_the_same():
    first, second = lowered_groups(in_place_jacobi(2))
    stencil = stencil_of(first)
    assert stencil is not None
    assert sorted((dr, dc) for _slot, dr, dc in stencil.shifts) == [(-1, 0), (0, -1), (0, 0), (0, 1), (1, 0)]
    assert (stencil.halo, stencil.behind, stencil.ahead) == (1, 1, 1)
    assert sweep_key(first) == sweep_key(second)
    passes = fused(first, stencil, 3)
    assert passes.reaches[stencil.target].behind == 3 and passes.reaches[stencil.target].ahead == 3
    assert passes.structure() != first.structure() != fused(first, stencil, 2).structure()


def test_sweeps_with_a_reduction_or_over_other_memory_are_not_fused():
    def heat(rec):
        grid = rec.array(RNG.random((30, 20)))
        work, delta, *temporaries = heat_sweep(rec, grid, (28, 18))
        rec.release(*temporaries)
        return [grid, work, delta]

    assert all(stencil_of(program) is None for program in lowered_groups(heat))
    one_row = repeated_update(10, 8, [(0, 2)], False, 1)  # halo columns left of every read
    assert stencil_of(lowered_groups(one_row)[0]) is None


def test_a_fused_view_block_reads_the_rows_its_earlier_sweeps_recompute():
    (program,) = lowered_groups(in_place_jacobi(1, shape=(40, 12)), block=10 * 10)
    stencil = stencil_of(program)
    assert stencil is not None
    passes = fused(program, stencil, 3)
    row_bytes = 12 * 8
    # view-block 1 covers view rows 10..19 = grid rows 11..20; three sweeps read grid rows 8..23
    blocks = widened_reads(passes, 1, row_bytes)
    assert [k for _base, k in blocks] == list(range(8, 24))


def test_sweeps_per_pass_must_be_a_positive_integer():
    with pytest.raises(ValueError, match="SHOAL_SWEEPS_PER_PASS"):
        NodeConfig(sweeps_per_pass="0")


def test_without_compiled_kernels_every_sweep_is_a_pass_of_its_own():
    stats = run_both(repeated_update(20, 9, [(-1, 0), (1, 1)], False, 4), block=20).last_stats
    assert stats.kernels == 4 and stats.sweep_passes == 0


def run_fused(program, block: int, threads: int = 2, schedule: str = "program", per_pass: int = 2):
    """Run ``program`` on the reference engine and, compiled, at ``per_pass`` sweeps per pass on
    the node engine; demand bit-equal results; return the node engine's batch statistics."""
    recorder = Recorder()
    views = program(recorder)
    config = NodeConfig(threads=threads, block_size=block, compile="sync", direct_work=0, schedule=schedule, sweeps_per_pass=per_pass)
    return against_the_reference(recorder.new_batch(), views, config)


@pytest.mark.full
@pytest.mark.parametrize(("per_pass", "kernels", "passes"), [(2, 5, 5), (3, 4, 3), (1, 10, 0)])
def test_ten_jacobi_sweeps_become_passes_of_several_sweeps(per_pass, kernels, passes):
    stats = run_fused(in_place_jacobi(10, shape=(64, 48)), block=7 * 48, per_pass=per_pass)
    assert stats.kernels == kernels and stats.sweep_passes == passes and stats.deferred_writes == kernels
    assert stats.compiled_block_ops > 0


@pytest.mark.full
@settings(max_examples=8, deadline=None)  # each a kernel compiled (about 5 s)
@given(**UPDATES, threads=st.sampled_from([1, 2, 3]), sweeps=st.integers(1, 5), per_pass=st.sampled_from([2, 3]), mirrored=st.booleans())
def test_random_repeated_in_place_updates_fused_into_passes_match_the_reference(
    rows, cols, shifts, reverse, block, threads, schedule, sweeps, per_pass, mirrored
):
    """Random shifts (``mirrored``: each with its opposite, as stencils mostly are), views
    walking rows backwards, any block size, thread count and legal schedule, 1 to 5 sweeps at 2
    or 3 per pass: bit-identical to the reference engine."""
    if mirrored:
        shifts = [*shifts, *((-dr, -dc) for dr, dc in shifts)]
    program = repeated_update(rows, cols, shifts, reverse, sweeps)
    stats = run_fused(program, block=block, threads=threads, schedule=schedule, per_pass=per_pass)
    fusible = all(stencil_of(group) is not None for group in lowered_groups(program))
    if fusible and len(lowered_groups(program)) == sweeps:
        assert stats.sweep_passes == sweeps // per_pass + (sweeps % per_pass >= 2)
        assert stats.kernels == -(-sweeps // per_pass)


@pytest.mark.full
def test_a_plan_built_before_its_sweep_pass_compiled_is_planned_again_once_it_is(monkeypatch):
    """Sweeps run one per pass while their pass's kernel is being compiled; the cached plan is
    dropped once it is ready, so later batches of the same shape run the fused pass."""
    recorder = Recorder()
    reference = ReferenceEngine()
    node = NodeEngine(NodeConfig(threads=2, block_size=5 * 30, compile="sync", direct_work=0, sweeps_per_pass=2))
    kernels = node._kernels
    assert kernels is not None
    lookup = kernels.lookup
    compiled_late: set[str] = set()

    def late(program, key=None):  # a sweep pass compiles, but is reported ready only from its second look-up
        kernel = lookup(program, key)
        if program.sweeps > 1 and program.stencil not in compiled_late:
            compiled_late.add(program.stencil)
            return None
        return kernel

    monkeypatch.setattr(kernels, "lookup", late)
    passes = []
    try:
        for _ in range(3):
            (grid,) = in_place_jacobi(4, shape=(40, 32))(recorder)
            batch = recorder.new_batch()
            reference.execute(batch)
            node.execute(batch)
            passes.append((node.last_stats.sweep_passes, node.last_stats.replayed))
            assert_same(node.fetch(grid), reference.fetch(grid), exact=True)
    finally:
        node.shutdown()
        reference.shutdown()
    assert passes == [(1, False), (2, False), (2, True)]  # sweeps 1-2 waited; 3-4 found it compiled


def shrinking_update(rows: int, cols: int, shifts: list[tuple[int, int]], sweeps: int, top: bool, bottom: bool):
    """:func:`repeated_update` whose every sweep writes the rows the one before it computed and
    no others: ``behind`` rows fewer at the start (``top``), ``ahead`` fewer at the end
    (``bottom``), as a rank's sweeps over its halo rows shrink (``shoal.cluster.halo``)."""
    behind = max(0, *(-dr for dr, _dc in shifts))
    ahead = max(0, *(dr for dr, _dc in shifts))

    def program(rec: Recorder):
        a = rec.array(RNG.random((rows + 4 * sweeps + 4, cols + 4)))
        for sweep in range(sweeps):
            first = 2 * sweeps + 2 + (sweep * behind if top else 0)
            last = 2 * sweeps + 2 + rows - (sweep * ahead if bottom else 0)

            def window(dr: int, dc: int, first=first, last=last) -> tuple[slice, slice]:
                return slice(first + dr, last + dr), slice(2 + dc, 2 + dc + cols)

            update(rec, a, window, shifts)
        return [a]

    return program


def test_sweeps_over_shrinking_rows_are_recognised_as_one_chain():
    first, second, third = lowered_groups(shrinking_update(20, 9, [(-1, 0), (1, 0), (0, 1)], 3, True, False))
    stencil = stencil_of(first)
    assert stencil is not None and sweep_key(second) != sweep_key(first)
    assert shrunk_by(first, stencil, second) == (1, 0) and shrunk_by(first, stencil, third) == (2, 0)
    assert chain_shrink(stencil, (1, 0), None, 1) == (1, 0) and chain_shrink(stencil, (2, 0), (1, 0), 2) == (1, 0)
    assert chain_shrink(stencil, (3, 0), (1, 0), 2) is None  # not the next step of the chain
    assert chain_shrink(stencil, (2, 0), None, 1) is None  # more rows than the sweep reads
    other = lowered_groups(repeated_update(19, 9, [(-1, 0), (1, 0), (0, 2)], False, 1))[0]
    assert shrunk_by(first, stencil, other) is None  # another sweep


@pytest.mark.full
@pytest.mark.parametrize(("top", "bottom"), [(True, False), (False, True), (True, True)])
def test_jacobi_sweeps_over_shrinking_rows_fuse_into_passes(top, bottom):
    program = shrinking_update(40, 30, [(-1, 0), (1, 0), (0, -1), (0, 1)], 8, top, bottom)
    stats = run_fused(program, block=5 * 30, threads=2, per_pass=4)
    assert stats.sweep_passes == 2 and stats.kernels == 2


@pytest.mark.full
@settings(max_examples=3, deadline=None)  # each a kernel compiled: the Jacobi chains above cover every shape
@given(
    rows=st.integers(9, 30),
    cols=st.integers(3, 12),
    shifts=UPDATES["shifts"],
    block=UPDATES["block"],
    threads=st.sampled_from([1, 3]),
    sweeps=st.integers(2, 4),
    top=st.booleans(),
    bottom=st.booleans(),
)
def test_random_shrinking_sweeps_fused_into_passes_match_the_reference(rows, cols, shifts, block, threads, sweeps, top, bottom):
    """Random shifts, rows dropped at either end or both, any block size: bit-identical to the
    reference engine, and fused wherever every sweep is a stencil with rows left to write."""
    shifts = [*shifts, *((-dr, -dc) for dr, dc in shifts)]
    program = shrinking_update(rows, cols, shifts, sweeps, top, bottom)
    stats = run_fused(program, block=block, threads=threads, per_pass=sweeps)
    groups = lowered_groups(program)
    if all(stencil_of(group) is not None for group in groups) and len(groups) == sweeps:
        assert stats.sweep_passes == 1 and stats.kernels == 1

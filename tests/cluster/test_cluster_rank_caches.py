"""What a rank keeps from one batch for the next of the same structure (no MPI needed): the
dependency graph of its operations, and the verdict of verifying rank 0's batch.

A kept graph must be the graph the dependency lists draw for the new batch's operations, and a
batch admitted by its key must be one that full verification accepts; anything that full
verification would reject is still rejected.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from shoal.bytecode import BaseDecl, Batch, BytecodeError, verify
from shoal.cluster.flush import Flusher
from shoal.cluster.plan import Op, PlanConfig, Planner
from shoal.cluster.verified import VerifiedBatches
from shoal.engine.blocks import BlockOp
from tests.cluster.test_cluster_plan_cache import (
    COLUMNS,
    ROWS,
    TAGS,
    Ids,
    creation,
    reduction,
    sweep,
)


def loop(iterations: int = 6) -> Iterator[Batch]:
    ids = Ids()
    grid = ids()
    yield creation(grid, 1)
    for _ in range(iterations):
        yield sweep(grid, ids)
        yield reduction(grid, ids)


def graph(blocks: list[BlockOp]) -> list[tuple]:
    index = {id(block): position for position, block in enumerate(blocks)}
    return [(block.seq, [index[id(d)] for d in block.dependents], block.waits, block.refcount) for block in blocks]


def drawn_afresh(ops: list[Op], planner: Planner, hiding: bool) -> list[tuple]:
    return graph(Flusher(None, None, planner.rank, hiding, planner.block_bytes)._blocks(ops))  # type: ignore[arg-type]


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("hiding", [True, False])
@pytest.mark.parametrize("halo_rows", [0, 2])
def test_a_plans_kept_graph_is_the_graph_drawn_afresh(ranks: int, hiding: bool, halo_rows: int) -> None:
    for rank in range(ranks):
        planner = Planner(rank, ranks, PlanConfig(min_bytes=256, cache_size=8, halo_rows=halo_rows), TAGS)
        flusher = Flusher(None, None, rank, hiding, planner.block_bytes)  # type: ignore[arg-type]
        for batch in loop():
            ops = planner.plan(batch)
            if not ops:
                continue
            assert graph(flusher._blocks(ops, planner.template)) == drawn_afresh(ops, planner, hiding)
            flusher._plan = {}
        assert flusher.graphs_reused >= 6


def test_two_grids_of_one_layout_share_a_plan_and_its_graph() -> None:
    """Sweeps of two grids alternate: one plan, so one graph, serves both."""
    ids = Ids()
    first, second = creation(ids(), 1), creation(ids(), 2)
    batches = [first, second] + [sweep(batch.bases[0].id, ids) for _ in range(3) for batch in (first, second)]
    for rank in range(2):
        planner = Planner(rank, 2, PlanConfig(min_bytes=256, cache_size=8), TAGS)
        flusher = Flusher(None, None, rank, True, planner.block_bytes)  # type: ignore[arg-type]
        for batch in batches:
            ops = planner.plan(batch)
            if ops:
                assert graph(flusher._blocks(ops, planner.template)) == drawn_afresh(ops, planner, True)
                flusher._plan = {}
        assert flusher.graphs_reused >= 5


def serve(batches: Iterator[Batch], rank: int = 1, ranks: int = 2) -> tuple[VerifiedBatches, Planner]:
    """Check and plan ``batches`` as a rank's loop does; the cache and the planner after them."""
    planner = Planner(rank, ranks, PlanConfig(min_bytes=256, cache_size=8), TAGS)
    verified = VerifiedBatches()
    for batch in batches:
        verified.check(batch, planner.decls, planner.layouts)
        planner.plan(batch)
    return verified, planner


def test_a_loop_is_verified_in_full_once_per_structure() -> None:
    verified, _ = serve(loop(6))
    assert verified.skipped == 10  # the creation, the first sweep and the first sum in full


def test_every_admitted_batch_passes_full_verification() -> None:
    planner = Planner(1, 2, PlanConfig(min_bytes=256, cache_size=8), TAGS)
    verified = VerifiedBatches()
    for batch in loop(4):
        known = dict(planner.decls)
        verified.check(batch, planner.decls, planner.layouts)
        verify(batch, known)
        planner.plan(batch)
    assert verified.skipped > 0


def _bad(batches: list[Batch], make: str) -> Batch:
    """A sweep of the loop's grid whose temporaries get a live id or negative ids."""
    grid = batches[0].bases[0].id
    ids = Ids()
    ids.next = batches[-1].bases[0].id - 1 if make == "live" else -6  # the last sum's result is live
    return sweep(grid, ids)


@pytest.mark.parametrize("make", ["live", "negative"])
def test_a_batch_declaring_a_live_or_negative_base_is_rejected_after_its_structure_passed(make: str) -> None:
    batches = list(loop(3))
    verified, planner = serve(iter(batches))
    with pytest.raises(BytecodeError):
        verified.check(_bad(batches, make), planner.decls, planner.layouts)


def test_a_known_base_of_another_dtype_is_verified_in_full() -> None:
    """An int64 grid has the float64 grid's layout (same item size): the key alone would match."""
    ids = Ids()
    batches = [creation(ids(), 1)]
    batches += [sweep(batches[0].bases[0].id, ids) for _ in range(3)]
    other = ids()
    batches.append(Batch(bases=[BaseDecl(other, np.dtype("i8"), ROWS * COLUMNS)], data={other: np.arange(ROWS * COLUMNS)}))
    verified, planner = serve(iter(batches))
    skipped = verified.skipped
    try:
        verified.check(sweep(other, ids), planner.decls, planner.layouts)
    except BytecodeError:
        pass
    assert verified.skipped == skipped

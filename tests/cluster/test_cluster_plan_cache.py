"""The cluster plan cache: a replayed plan is exactly the plan planning gives (no MPI needed).

Each test plans the same sequence of batches with a planner that caches and one that does not,
for every rank of 1, 2 and 3, and compares every operation and the planners' bookkeeping after
each batch; it also counts the replays, so a cache that never hits fails as well.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest

from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View, make_attrs
from shoal.cluster.plan import Op, PlanConfig, Planner

F8 = np.dtype("f8")
ROWS, COLUMNS = 12, 10
TAGS = 1000


def grid_view(base: int, rows: slice, columns: slice) -> View:
    """``grid[rows, columns]`` of a C-ordered ROWS x COLUMNS float64 base."""
    r0, r1, _ = rows.indices(ROWS)
    c0, c1, _ = columns.indices(COLUMNS)
    return View(base, F8, (r0 * COLUMNS + c0) * 8, (r1 - r0, c1 - c0), (COLUMNS * 8, 8))


def whole(base: int, shape: tuple[int, ...]) -> View:
    strides = (shape[1] * 8, 8) if len(shape) == 2 else (8,)
    return View(base, F8, 0, shape, strides)


def release(base: int) -> Instruction:
    return Instruction("release", (), (), make_attrs(base=base))


class Ids:
    """Fresh global base numbers, as the runtime hands them out."""

    def __init__(self) -> None:
        self.next = 100

    def __call__(self) -> int:
        self.next += 1
        return self.next


def sweep(grid: int, ids: Ids, factor: float = 0.2, shift: int = 0) -> Batch:
    """One heat-equation iteration: ``work = factor * (c + n + s + w + e); c[:] = work``."""
    inner = (ROWS - 2, COLUMNS - 2)
    total, work = ids(), ids()
    centre = grid_view(grid, slice(1 + shift, ROWS - 1 + shift if shift else -1), slice(1, -1))
    neighbours = [
        grid_view(grid, slice(0, -2), slice(1, -1)),
        grid_view(grid, slice(2, None), slice(1, -1)),
        grid_view(grid, slice(1, -1), slice(0, -2)),
        grid_view(grid, slice(1, -1), slice(2, None)),
    ]
    instructions = [Instruction("add", (whole(total, inner),), (centre, neighbours[0]))]
    instructions += [Instruction("add", (whole(total, inner),), (whole(total, inner), view)) for view in neighbours[1:]]
    instructions += [
        Instruction("multiply", (whole(work, inner),), (whole(total, inner), Const(factor))),
        Instruction("copy", (grid_view(grid, slice(1, -1), slice(1, -1)),), (whole(work, inner),)),
        release(total),
        release(work),
    ]
    return Batch(bases=[BaseDecl(total, F8, inner[0] * inner[1]), BaseDecl(work, F8, inner[0] * inner[1])], instructions=instructions)


def creation(base: int, seed: int) -> Batch:
    data = np.random.default_rng(seed).random(ROWS * COLUMNS)
    return Batch(bases=[BaseDecl(base, F8, ROWS * COLUMNS)], data={base: data})


def reduction(grid: int, ids: Ids) -> Batch:
    out = ids()
    return Batch(
        bases=[BaseDecl(out, F8, 1)],
        instructions=[Instruction("sum", (View(out, F8, 0, (), ()),), (whole(grid, (ROWS, COLUMNS)),), make_attrs(axis=None))],
    )


def describe(op: Op, positions: dict[int, int]) -> tuple:
    data = tuple(sorted((base, array.tobytes()) for base, array in op.data.items()))
    return (
        op.kind, tuple(op.reads), tuple(op.writes), tuple(op.instructions), op.positions, tuple(positions[id(need)] for need in op.needs),
        tuple(op.declares), op.peer, op.tag, op.view, op.temp, op.dtype, op.shape, data,
    )  # fmt: skip


def described(ops: list[Op]) -> list[tuple]:
    positions = {id(op): position for position, op in enumerate(ops)}
    return [describe(op, positions) for op in ops]


def state(planner: Planner) -> tuple:
    return (
        dict(planner.layouts), dict(planner.decls), dict(planner.local), dict(planner.block_bytes), planner._next_local,
        planner._tag, sorted(planner._retired), dict(planner.valid), dict(planner.demand),
    )  # fmt: skip


def planners(ranks: int, halo_rows: int = 0, redundant_rows: bool = True) -> Iterator[tuple[Planner, Planner]]:
    for rank in range(ranks):
        yield (
            Planner(rank, ranks, PlanConfig(min_bytes=256, cache_size=8, halo_rows=halo_rows, redundant_rows=redundant_rows), TAGS),
            Planner(rank, ranks, PlanConfig(min_bytes=256, cache_size=0, halo_rows=halo_rows, redundant_rows=redundant_rows), TAGS),
        )


def check_same(ranks: int, batches: Callable[[], Iterator[Batch]], halo_rows: int = 0, redundant_rows: bool = True) -> list[int]:
    """Plan ``batches()`` on every rank with and without the cache; returns each rank's hits."""
    hits = []
    for cached, fresh in planners(ranks, halo_rows, redundant_rows):
        for batch, again in zip(batches(), batches(), strict=True):
            assert described(cached.plan(batch)) == described(fresh.plan(again))
            assert state(cached) == state(fresh)
        assert fresh.cache.hits == 0
        hits.append(cached.cache.hits)
    return hits


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_a_loop_replays_its_plan_exactly(ranks: int) -> None:
    def batches() -> Iterator[Batch]:
        ids = Ids()
        grid = ids()
        yield creation(grid, 1)
        for _ in range(6):
            yield sweep(grid, ids)
            yield reduction(grid, ids)

    assert check_same(ranks, batches) == [10] * ranks  # 12 batches: the first sweep and sum plan


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("redundant", [True, False])
def test_a_loop_with_halos_replays_its_plan_exactly(ranks: int, redundant: bool) -> None:
    """With halo rows the plan depends on which halo rows are current and, computing own rows
    only, on what the ranks read before: both are in the key and restored by a replay."""

    def batches() -> Iterator[Batch]:
        ids = Ids()
        grid = ids()
        yield creation(grid, 1)
        for _ in range(8):
            yield sweep(grid, ids)
        yield reduction(grid, ids)
        for _ in range(4):
            yield sweep(grid, ids)

    hits = check_same(ranks, batches, halo_rows=2, redundant_rows=redundant)
    assert all(count >= 5 for count in hits)


@pytest.mark.parametrize("ranks", [2, 3])
def test_a_changed_batch_plans_afresh(ranks: int) -> None:
    """A shifted view misses; a new constant or new data replay the plan with theirs (compared
    with fresh planning op by op); the original batch hits again."""

    def batches() -> Iterator[Batch]:
        ids = Ids()
        grid = ids()
        yield creation(grid, 1)
        yield sweep(grid, ids)
        yield sweep(grid, ids, factor=0.25)  # another constant: hit
        yield sweep(grid, ids, shift=1)  # the centre view one row down
        yield sweep(grid, ids, factor=0.25)  # hit
        yield sweep(grid, ids)  # hit
        other = ids()
        yield creation(other, 2)  # the same declaration with other data: hit, the new data planned
        yield sweep(other, ids)  # hit: the same layout as the first grid

    assert check_same(ranks, batches) == [5] * ranks


def test_the_same_instructions_on_a_base_of_another_layout_miss() -> None:
    """A small base lives on rank 0, a large one is split: the same program text on each plans
    differently, and each plan replays only for its own layout."""

    def batches() -> Iterator[Batch]:
        ids = Ids()
        large = ids()
        yield creation(large, 1)
        small = ids()
        yield Batch(bases=[BaseDecl(small, F8, ROWS * COLUMNS)], data={small: np.ones(ROWS * COLUMNS)})
        for _ in range(2):
            for grid in (large, small):
                yield sweep(grid, ids)

    config = PlanConfig(min_bytes=ROWS * COLUMNS * 8, replicate_bytes=0, cache_size=8)  # the small base on rank 0 alone
    for rank in range(2):
        cached, fresh = Planner(rank, 2, config, TAGS), Planner(rank, 2, PlanConfig(min_bytes=config.min_bytes, replicate_bytes=0, cache_size=0), TAGS)
        stream = list(batches())
        stream[1].bases[0] = BaseDecl(stream[1].bases[0].id, F8, ROWS * COLUMNS - COLUMNS)  # smaller: kept on rank 0
        stream[1].data[stream[1].bases[0].id] = np.ones(ROWS * COLUMNS - COLUMNS)
        again = list(batches())
        again[1].bases[0], again[1].data = stream[1].bases[0], dict(stream[1].data)
        for batch, copy in zip(stream, again, strict=True):
            assert described(cached.plan(batch)) == described(fresh.plan(copy))
            assert state(cached) == state(fresh)
        assert cached.layouts[stream[0].bases[0].id].distributed
        assert not cached.layouts[stream[1].bases[0].id].distributed
        assert cached.cache.hits == 2 and cached.cache.misses == 4


def test_least_recently_used_plans_are_dropped() -> None:
    def batches() -> Iterator[Batch]:
        ids = Ids()
        grid = ids()
        yield creation(grid, 1)
        for _ in range(2):  # three keys, two kept
            yield sweep(grid, ids)
            yield sweep(grid, ids, shift=1)
            yield reduction(grid, ids)

    cached, fresh = Planner(1, 2, PlanConfig(min_bytes=256, cache_size=2), TAGS), Planner(1, 2, PlanConfig(min_bytes=256, cache_size=0), TAGS)
    for batch, again in zip(batches(), batches(), strict=True):
        assert described(cached.plan(batch)) == described(fresh.plan(again))
    assert cached.cache.hits == 0 and len(cached.cache.templates) == 2


def test_replayed_messages_pair_up_across_ranks() -> None:
    """Every send planned on one rank has its receive, same tag and size, on the peer, also
    when the plan was replayed and the tags wrapped around."""
    ids = Ids()
    grid = ids()
    stream = [creation(grid, 1)] + [sweep(grid, ids) for _ in range(40)]
    ranks = 3
    sides = [Planner(rank, ranks, PlanConfig(min_bytes=256, cache_size=4), 7) for rank in range(ranks)]
    for number, batch in enumerate(stream):
        plans = [side.plan(batch) for side in sides]
        sends = sorted((rank, op.peer, op.tag, op.view.size) for rank, ops in enumerate(plans) for op in ops if op.kind == "send")
        receives = sorted((op.peer, rank, op.tag, int(np.prod(op.shape))) for rank, ops in enumerate(plans) for op in ops if op.kind == "receive")
        assert sends == receives
        assert bool(sends) == (number > 0)  # every sweep moves halo rows
    assert all(side.cache.hits == 39 for side in sides)


def scaled(grid: int, ids: Ids, first: Const, second: Const) -> Batch:
    """``work = grid * first; work += second`` (the same constant object twice, or two)."""
    work = ids()
    shape = (ROWS, COLUMNS)
    return Batch(
        bases=[BaseDecl(work, F8, ROWS * COLUMNS)],
        instructions=[
            Instruction("multiply", (whole(work, shape),), (whole(grid, shape), first)),
            Instruction("add", (whole(work, shape),), (whole(work, shape), second)),
            release(work),
        ],
    )


@pytest.mark.parametrize("ranks", [2, 3])
def test_a_constant_object_used_twice_is_not_kept_as_one(ranks: int) -> None:
    """A plan made from a batch that uses one constant object in two places is not kept: a later
    batch may hold two different values there."""

    def batches() -> Iterator[Batch]:
        ids = Ids()
        grid = ids()
        yield creation(grid, 1)
        half = Const(0.5)
        yield scaled(grid, ids, half, half)
        yield scaled(grid, ids, Const(0.5), Const(0.25))  # planned afresh, kept
        yield scaled(grid, ids, Const(0.125), Const(3.0))  # replayed with its own two

    assert check_same(ranks, batches) == [1] * ranks

"""Block geometry and the dependency lists of the node engine."""

from __future__ import annotations

import sys

import numpy as np
import pytest

from shoal.bytecode import View
from shoal.engine.blocks.geometry import base_blocks, collapse, partition, sub_view_blocks
from shoal.engine.blocks.dependencies import BlockOp, DependencyLists
from shoal.engine.blocks.scheduler import WorkerPool

F8 = np.dtype(np.float64)


def grid_view(n: int, row: int, col: int, rows: int, cols: int) -> View:
    return View(1, F8, (row * n + col) * 8, (rows, cols), (n * 8, 8))


def covered_elements(pieces: list[tuple[int, View]]) -> list[int]:
    """Byte offsets of every element of every piece, in order."""
    offsets = []
    for _, piece in pieces:
        index = np.indices(piece.shape).reshape(piece.ndim, -1).T if piece.ndim else np.zeros((1, 0), int)
        offsets += [piece.offset + int(np.dot(i, piece.strides)) for i in index]
    return offsets


@pytest.mark.parametrize(("row", "col"), [(0, 0), (1, 1), (0, 1), (2, 1), (1, 0), (1, 2)])
@pytest.mark.parametrize("block_elements", [5, 16, 24, 64])
def test_sub_view_blocks_of_stencil_views_lie_in_one_base_block_and_cover_the_view(row, col, block_elements):
    n = 8
    view = grid_view(n, row, col, n - 2, n - 2)
    block_bytes = block_elements * 8
    pieces = sub_view_blocks(view, block_bytes)
    for block, piece in pieces:
        low, high = piece.byte_extent()
        assert low // block_bytes == block == (high - 1) // block_bytes
    expected = [view.offset + i * view.strides[0] + j * 8 for i in range(n - 2) for j in range(n - 2)]
    assert sorted(covered_elements(pieces)) == expected


def test_aligned_view_has_one_sub_view_block_per_base_block():
    n = 8
    view = View(1, F8, 0, (n, n), (n * 8, 8))
    pieces = sub_view_blocks(view, 2 * n * 8)  # two rows per base-block
    assert [block for block, _ in pieces] == [0, 1, 2, 3]
    assert all(piece.shape == (2, n) for _, piece in pieces)


def test_non_aligned_view_straddles_and_is_split():
    n = 8
    view = grid_view(n, 1, 1, n - 2, n - 2)
    pieces = sub_view_blocks(view, 2 * n * 8)
    blocks = [block for block, _ in pieces]
    assert blocks == [0, 1, 2, 3]
    assert [piece.shape for _, piece in pieces] == [(1, 6), (2, 6), (2, 6), (1, 6)]
    rows_within_row = sub_view_blocks(view, 12 * 8)  # base-blocks of one and a half rows
    assert any(piece.shape[-1] < 6 for _, piece in rows_within_row)


def test_view_of_view_with_negative_strides_is_covered():
    base = View(1, F8, 63 * 8, (8, 8), (-64, -8))  # a fully reversed 8x8 grid
    pieces = sub_view_blocks(base, 24 * 8)
    assert sorted(covered_elements(pieces)) == [8 * i for i in range(64)]


def test_partition_splits_the_outer_axis_and_keeps_inner_axes_whole():
    part = partition((10, 4), 8)
    assert part.axis == 0 and part.rows == 2 and len(part) == 5
    assert [part.block_shape(i) for i in range(len(part))] == [(2, 4)] * 5


def test_partition_goes_inward_when_rows_are_larger_than_a_block():
    part = partition((3, 100), 30)
    assert part.axis == 1 and len(part) == 3 * 4
    assert part.block_shape(3) == (10,)  # the partial edge block of the first row
    assert part.block_offset(4, 0, (800, 8)) == 800  # second row starts a new view-block


def test_collapse_merges_contiguous_axes_but_not_shifted_windows():
    shape, strides = collapse((4, 5, 6), [(240, 48, 8), (240, 48, 8)])
    assert shape == (120,) and strides == [(8,), (8,)]
    shape, strides = collapse((6, 6), [(64, 8), (64, 8)])
    assert shape == (6, 6)
    shape, strides = collapse((1, 1), [(8, 8)])
    assert shape == (1,)


def test_base_blocks_range():
    assert list(base_blocks(0, 80, 40)) == [0, 1]
    assert list(base_blocks(39, 41, 40)) == [0, 1]
    assert list(base_blocks(40, 40, 40)) == []


def op(seq: int, reads=(), writes=()) -> BlockOp:
    return BlockOp(seq, lambda: None, tuple(reads), tuple(writes))


def test_read_after_write_write_after_read_and_write_after_write():
    deps = DependencyLists()
    writer = op(1, writes=[(1, 0)])
    reader = op(2, reads=[(1, 0)])
    other_reader = op(3, reads=[(1, 0), (2, 0)])
    overwriter = op(4, writes=[(1, 0)])
    unrelated = op(5, reads=[(2, 1)], writes=[(3, 0)])
    for o in (writer, reader, other_reader, overwriter, unrelated):
        deps.insert(o)
    assert [o.refcount for o in (writer, reader, other_reader, overwriter, unrelated)] == [0, 1, 1, 3, 0]
    assert reader in writer.dependents and overwriter in reader.dependents


def test_block_ops_of_one_group_share_base_blocks_without_waiting_for_each_other():
    deps = DependencyLists()
    first = [op(1, writes=[(1, 0), (1, 1)]), op(2, writes=[(1, 1), (1, 2)])]
    deps.insert_group(first)
    assert [o.refcount for o in first] == [0, 0]
    second = [op(3, reads=[(1, 0), (1, 1)]), op(4, reads=[(1, 2)])]
    deps.insert_group(second)
    assert [o.refcount for o in second] == [2, 1]


def test_a_group_that_reads_and_writes_a_block_makes_later_writers_wait_for_its_readers():
    deps = DependencyLists()
    group = [op(1, reads=[(1, 0)]), op(2, writes=[(1, 0)])]
    deps.insert_group(group)
    later = op(3, writes=[(1, 0)])
    deps.insert(later)
    assert later.refcount == 2


def test_an_operation_inserted_after_its_predecessor_finished_counts_it_only_for_replays():
    deps = DependencyLists()
    writer = op(1, writes=[(1, 0)])
    deps.insert(writer)
    writer.done = True  # the pool ran it while later operations were still being built
    reader = op(2, reads=[(1, 0)])
    deps.insert(reader)
    assert reader.refcount == 0 and reader.waits == 1 and reader in writer.dependents


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("threads", [1, 3])
def test_the_pool_runs_operations_built_while_earlier_ones_run_in_dependency_order(threads, reverse):
    """Each step writes block 0 after reading it (a chain) and reads a block of its own; steps
    are built one at a time by ``more`` while the pool runs the earlier ones."""
    deps = DependencyLists()
    log: list[int] = []

    def step(number: int) -> list[BlockOp]:
        built = len(deps.ops)
        chain = BlockOp(2 * number, lambda: log.append(number), ((1, 0),), ((1, 0),))
        side = BlockOp(2 * number + 1, lambda: log.append(-number), ((1, 0),), ((2, number),))
        deps.insert(side)
        deps.insert(chain)
        return deps.ops[built:]

    steps = iter(range(1, 30))
    pool = WorkerPool(threads, reverse=reverse)
    try:
        stats = pool.run(step(0), lambda _op: None, lambda: next((step(n) for n in steps), None))
    finally:
        pool.close()
    assert stats.operations == 60 and sorted(log) == sorted([*range(30), *(-n for n in range(30))])
    assert [n for n in log if n > 0] == list(range(1, 30))
    for number in range(1, 30):  # a side read sees the chain's write before it, never a later one
        assert log.index(number - 1) < log.index(-number) < log.index(number)
    for o in deps.ops:
        assert o.done and o.refcount == 0


@pytest.mark.parametrize("fails", [False, True])
def test_building_while_running_restores_the_switch_interval_and_reports_a_failing_build(fails):
    built = iter([[BlockOp(1, lambda: None, (), ((1, 0),))]])

    def more():
        if fails:
            raise ValueError("cannot build")
        return next(built, None)

    before = sys.getswitchinterval()
    pool = WorkerPool(2)
    try:
        if fails:
            with pytest.raises(ValueError, match="cannot build"):
                pool.run([], lambda _op: None, more)
        else:
            assert pool.run([], lambda _op: None, more).operations == 1
    finally:
        pool.close()
    assert sys.getswitchinterval() == before

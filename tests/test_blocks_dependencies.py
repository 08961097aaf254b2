"""The per-base-block dependency lists and the reference counts they give (paper 003 §5.7.2)."""

from __future__ import annotations

from shoal.engine.blocks.dependencies import BlockOp, DependencyLists


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


def test_an_operation_that_needs_a_base_it_does_not_touch_reads_its_first_block():
    """An empty boolean mask needs the base allocated but reads none of it; the release, which
    writes every block, must still wait for it."""
    deps = DependencyLists()
    empty = BlockOp(1, lambda: None, (), ((2, 0),), bases=(1, 2), written=(2,))
    deps.insert(empty)
    assert empty.reads == ((1, 0),)
    release = BlockOp(2, lambda: None, (), ((1, 0), (1, 1)), frees=1)
    deps.insert(release)
    assert release.refcount == 1 and release in empty.dependents


def test_edges_count_every_dependency_once():
    deps = DependencyLists()
    writer = op(1, writes=[(1, 0), (1, 1)])
    reader = op(2, reads=[(1, 0), (1, 1)])  # two shared blocks, one edge
    deps.insert(writer)
    deps.insert(reader)
    assert deps.edges == 1 and reader.waits == 1 and writer.dependents == [reader]

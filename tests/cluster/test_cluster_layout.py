"""Layouts and the splitting of views into pieces that each lie on one rank (no MPI needed)."""

from __future__ import annotations

import itertools
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.bytecode import View
from shoal.cluster.cyclic import sorted_unique
from shoal.cluster.layout import (
    TooFragmented,
    block,
    broadcast_to,
    by_components,
    components_first,
    owner,
    row_length,
    split,
    sub_view,
    whole_on,
)


def element_owner(layout, byte: int) -> int:
    element = byte // layout.itemsize
    for rank in range(len(layout.starts) - 1):
        if layout.starts[rank] <= element < layout.starts[rank + 1]:
            return rank
    raise AssertionError(byte)


def check_tiling(view: View, layout, pieces) -> None:
    """The pieces cover every index of the view once, and each element of a piece lies on the
    rank the piece names."""
    seen = np.zeros(view.shape, dtype=np.int64)
    for box, (rank,) in pieces:
        seen[tuple(slice(low, high) for low, high in box)] += 1
        part = sub_view(view, box)
        for index in itertools.product(*(range(n) for n in part.shape)):
            byte = part.offset + sum(i * s for i, s in zip(index, part.strides))
            assert element_owner(layout, byte) == rank
    assert (seen == 1).all()


def test_block_layout_splits_whole_rows_as_evenly_as_rows_allow() -> None:
    layout = block(3, 37 * 53, 8, row=53)
    assert layout.starts == (0, 13 * 53, 25 * 53, 37 * 53)
    assert [layout.count(rank) for rank in range(3)] == [689, 636, 636]
    assert block(3, 10, 8).starts == (0, 4, 7, 10)
    assert block(2, 7, 8, row=3).starts == (0, 4, 7)  # a row length that does not divide: elements
    assert not whole_on(0, 3, 100, 8).distributed and layout.distributed


def test_a_few_leading_components_stay_together_and_rows_split_as_a_grid_of_their_own() -> None:
    assert components_first((9, 256, 512), 2) and components_first((3, 64, 5), 4)
    assert not components_first((16, 256, 512), 2)  # a leading axis of 16 or more is the one to split
    assert not components_first((9, 31, 512), 2)  # too few rows of the grid per rank
    assert not components_first((9, 4096), 2)  # two axes: rows as usual
    for ranks in (2, 4):
        populations = by_components(ranks, (9, 256, 512), 8)
        density = block(ranks, 256 * 512, 8, row=512)
        for y in range(0, 256, 7):
            rows = {owner(View(1, np.dtype("f8"), (c * 256 + y) * 4096, (512,), (8,)), populations) for c in range(9)}
            assert rows == {owner(View(2, np.dtype("f8"), y * 4096, (512,), (8,)), density)}


def test_row_length_only_for_a_c_ordered_view_of_the_whole_base() -> None:
    assert row_length(View(1, np.dtype("f8"), 0, (37, 53), (424, 8)), 37 * 53) == 53
    assert row_length(View(1, np.dtype("f8"), 0, (53, 37), (8, 424)), 37 * 53) == 1
    assert row_length(View(1, np.dtype("f8"), 8, (36, 53), (424, 8)), 37 * 53) == 1


@settings(max_examples=60, deadline=None)
@given(
    ranks=st.integers(1, 4),
    rows=st.integers(1, 9),
    columns=st.integers(1, 9),
    data=st.data(),
)
def test_split_tiles_any_strided_view_by_owner(ranks: int, rows: int, columns: int, data: st.DataObject) -> None:
    layout = block(ranks, rows * columns, 8)
    row_step = data.draw(st.sampled_from([1, -1, 2]))
    column_step = data.draw(st.sampled_from([1, -1, 3]))
    base = np.arange(rows * columns).reshape(rows, columns)
    window = base[:: row_step, :: column_step]
    if data.draw(st.booleans()):
        window = window.T
    offset = int(window.flat[0]) * 8 if window.size else 0
    view = View(1, np.dtype("f8"), offset, window.shape, tuple(s for s in window.strides))
    check_tiling(view, layout, split([(view, layout)], view.shape, 1 << 20))


def test_split_refines_by_every_operand_and_broadcast_inputs() -> None:
    out_layout = block(3, 12 * 5, 8, row=5)
    row_layout = whole_on(0, 3, 5, 8)
    out = View(1, np.dtype("f8"), 0, (12, 5), (40, 8))
    row = broadcast_to(View(2, np.dtype("f8"), 0, (5,), (8,)), (12, 5))
    shifted = View(3, np.dtype("f8"), 80, (12, 5), (40, 8))
    shifted_layout = block(3, 14 * 5, 8, row=5)
    pieces = split([(out, out_layout), (row, row_layout), (shifted, shifted_layout)], (12, 5), 100)
    for box, owners in pieces:
        assert owners[0] == owner(sub_view(out, box), out_layout)
        assert owners[1] == 0
        assert owners[2] == owner(sub_view(shifted, box), shifted_layout)
    assert len({owners for _, owners in pieces}) > 3  # the shifted input crosses ranks elsewhere


def test_split_gives_up_past_its_limit_and_on_nothing() -> None:
    layout = block(3, 30 * 30, 8, row=30)
    transposed = View(1, np.dtype("f8"), 0, (30, 30), (8, 240))
    with pytest.raises(TooFragmented):
        split([(transposed, layout)], (30, 30), 2)  # three pieces: one block of columns per rank
    assert split([(transposed, layout)], (0, 30), 10) == []


def exhaustive_split(operands, shape):
    """The pieces found by asking every index of each axis for its owners (the definition the
    splitter's shortcut of evaluating owners only where they may change must agree with)."""
    pieces = []

    def cut(box, axis):
        owners = tuple(owner(sub_view(view, box), layout) for view, layout in operands)
        if all(rank >= 0 for rank in owners):
            pieces.append((box, owners))
            return
        while axis < len(box) and box[axis][1] - box[axis][0] == 1:
            axis += 1
        if axis == len(box):
            raise TooFragmented("an element spans two ranks")
        low, high = box[axis]
        columns = [
            tuple(owner(sub_view(view, (*box[:axis], (i, i + 1), *box[axis + 1 :])), layout) for view, layout in operands)
            for i in range(low, high)
        ]
        begin = 0
        for end in range(1, len(columns) + 1):
            if end == len(columns) or columns[end] != columns[begin]:
                if all(rank >= 0 for rank in columns[begin]):
                    pieces.append(((*box[:axis], (low + begin, low + end), *box[axis + 1 :]), columns[begin]))
                else:
                    for index in range(low + begin, low + end):
                        cut((*box[:axis], (index, index + 1), *box[axis + 1 :]), axis + 1)
                begin = end

    cut(tuple((0, n) for n in shape), 0)
    return pieces


@settings(max_examples=80, deadline=None)
@given(
    ranks=st.integers(1, 5),
    rows=st.integers(1, 12),
    columns=st.integers(1, 12),
    halo=st.integers(0, 2),
    data=st.data(),
)
def test_split_finds_the_pieces_every_index_would(ranks: int, rows: int, columns: int, halo: int, data: st.DataObject) -> None:
    """Several operands: strided, reversed, transposed, shifted, broadcast, and elements wider
    than the base's (a view that spans two ranks at some indices)."""
    layout = block(ranks, rows * columns, 4, row=columns, halo_rows=halo)
    base = np.arange(rows * columns, dtype=np.int32).reshape(rows, columns)
    operands = []
    shape = None
    for _ in range(data.draw(st.integers(1, 3))):
        first_row, first_column = data.draw(st.integers(0, rows - 1)), data.draw(st.integers(0, columns - 1))
        window = base[first_row:, first_column:][:: data.draw(st.sampled_from([1, -1, 2, 3])), :: data.draw(st.sampled_from([1, -1, 2]))]
        if data.draw(st.booleans()):
            window = window.T
        if shape is None:
            shape = window.shape
        window = window[: shape[0], : shape[1]]
        if window.shape != shape:
            continue
        offset = int(window.flat[0]) * 4
        itemsize = data.draw(st.sampled_from([4, 4, 8])) if window.strides[1] == 4 else 4
        if itemsize == 8 and (shape[1] < 2 or window.strides[1] != 4):
            itemsize = 4
        if itemsize == 8:  # pairs of int32 read as one int64: elements may straddle ranks
            view = View(1, np.dtype("i8"), offset, (shape[0], shape[1] // 2), (window.strides[0], 8))
        else:
            view = View(1, np.dtype("i4"), offset, shape, window.strides)
        operands.append(view)
    out_shape = operands[0].shape
    chosen = [(view, layout) for view in operands if view.shape == out_shape]
    if data.draw(st.booleans()):
        chosen.append((broadcast_to(View(2, np.dtype("f8"), 0, (out_shape[1],), (8,)), out_shape), whole_on(0, ranks, out_shape[1], 8)))
    try:
        expected = exhaustive_split(chosen, out_shape)
    except TooFragmented:  # raised from owner-less single elements
        with pytest.raises(TooFragmented):
            split(chosen, out_shape, 1 << 20)
        return
    if any(n == 0 for n in out_shape):
        expected = []
    got = split(chosen, out_shape, 1 << 20)
    if got != expected:  # a run that spans ranks cut as a grid of fewer pieces than index by index
        assert len(got) < len(expected)
        check_pieces(chosen, out_shape, got)


def check_pieces(operands, shape, pieces) -> None:
    """The pieces cover every index of ``shape`` once, each with its operands' owners."""
    seen = np.zeros(shape, dtype=np.int64)
    for box, owners in pieces:
        seen[tuple(slice(low, high) for low, high in box)] += 1
        assert owners == tuple(owner(sub_view(view, box), layout) for view, layout in operands)
        assert min(owners) >= 0
    assert (seen == 1).all()


@settings(max_examples=100, deadline=None)
@given(
    ranks=st.integers(1, 5),
    size=st.integers(1, 60),
    itemsize=st.sampled_from([1, 4, 8]),
    halo=st.integers(0, 3),
    data=st.data(),
)
def test_each_ranks_owned_rows_are_those_asked_row_by_row(ranks: int, size: int, itemsize: int, halo: int, data: st.DataObject) -> None:
    """The halo planner finds each rank's rows of a view from the rank's bounds alone; asked
    row by row, the owners are the same, and a row that spans ranks gives None."""
    from shoal.cluster.halo import _owned_rows, _rows

    layout = block(ranks, size, itemsize, halo_rows=halo)
    offset = data.draw(st.integers(0, size - 1))
    count = data.draw(st.integers(1, size - offset))
    step = data.draw(st.integers(0 if count == 1 else 1, max(1, (size - offset - 1) // max(1, count - 1))))
    widest = max(1, min(step or 1, size - offset - step * (count - 1)))
    width = data.draw(st.sampled_from([1, widest]) | st.integers(1, widest))
    view = View(1, np.dtype(f"u{itemsize}"), offset * itemsize, (count, width), (step * itemsize, itemsize))
    rows = _rows(view)
    owners = [owner(sub_view(view, ((row, row + 1), (0, width))), layout) for row in range(count)]
    got = _owned_rows(rows, count, layout, ranks)
    if min(owners) < 0:
        assert got is None
        return
    expected = []
    for rank in range(ranks):
        mine = [row for row, who in enumerate(owners) if who == rank]
        expected.append((mine[0], mine[-1] + 1) if mine else (0, 0))
    assert got == expected


def test_a_row_across_two_ranks_has_no_owner() -> None:
    from shoal.cluster.halo import _owned_rows, _rows

    layout = block(2, 10, 8)  # rank 0 elements 0-4, rank 1 elements 5-9
    view = View(1, np.dtype("u8"), 0, (2, 4), (32, 8))  # rows 0-3 and 4-7
    assert _owned_rows(_rows(view), 2, layout, 2) is None
    inside = View(1, np.dtype("u8"), 8, (2, 2), (40, 8))  # rows 1-2 and 6-7
    assert _owned_rows(_rows(inside), 2, layout, 2) == [(0, 1), (1, 2)]


@settings(max_examples=50, deadline=None)
@given(st.lists(st.integers(-(2**40), 2**40), max_size=40))
def test_sorted_unique_is_numpys_unique(values: list[int]) -> None:
    array = np.array(values, dtype=np.int64)
    assert sorted_unique(array).tolist() == np.unique(array).tolist()


def test_splitting_imports_no_masked_arrays() -> None:
    """``np.unique``'s first call imports ``numpy.ma``: 6-15 ms of every rank's first batch."""
    code = (
        "import sys; from shoal.bytecode import View; import numpy as np; "
        "from shoal.cluster.layout import block, split; "
        "view = View(1, np.dtype('f8'), 0, (6, 4), (32, 8)); "
        "split([(view, block(3, 24, 8, row=4))], view.shape, 64); "
        "print('numpy.ma' in sys.modules)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert result.stdout.strip() == "False"


def test_a_transposed_wide_array_splits_into_a_piece_per_rank_and_column() -> None:
    """``a.T + 1`` of a (2, 2^19) array over two ranks: each column of ``a.T`` lies on one rank,
    each row spans both; cut index by index it made a piece per element (minutes at the ranks)."""
    rows, columns = 2, 1 << 19
    layout = block(2, rows * columns, 8, row=columns)
    transposed = View(1, np.dtype("f8"), 0, (columns, rows), (8, columns * 8))
    out = View(2, np.dtype("f8"), 0, (columns, rows), (rows * 8, 8))
    out_layout = block(2, rows * columns, 8, row=rows)
    pieces = split([(transposed, layout), (out, out_layout)], (columns, rows), 16)
    assert sorted(pieces) == [
        (((0, columns // 2), (0, 1)), (0, 0)),
        (((0, columns // 2), (1, 2)), (1, 0)),
        (((columns // 2, columns), (0, 1)), (0, 1)),
        (((columns // 2, columns), (1, 2)), (1, 1)),
    ]


@pytest.mark.parametrize("ranks", [3, 4])
def test_a_transposed_wide_array_over_more_ranks_than_rows_splits_in_few_pieces(ranks: int) -> None:
    """Three ranks over two rows of 2^19: rank bounds fall inside rows, so the owner of a column
    of ``a.T`` changes along both axes; still a few pieces, not one per element."""
    rows, columns = 2, 1 << 19
    layout = block(ranks, rows * columns, 8, row=columns)
    transposed = View(1, np.dtype("f8"), 0, (columns, rows), (8, columns * 8))
    out = View(2, np.dtype("f8"), 0, (columns, rows), (rows * 8, 8))
    out_layout = block(ranks, rows * columns, 8, row=rows)
    operands = [(transposed, layout), (out, out_layout)]
    pieces = split(operands, (columns, rows), 64)
    for box, owners in pieces:
        assert owners == tuple(owner(sub_view(view, box), layout) for view, layout in operands)
    assert sum((high - low) * (right - left) for ((low, high), (left, right)), _ in pieces) == rows * columns


@settings(max_examples=60, deadline=None)
@given(ranks=st.integers(2, 5), rows=st.integers(1, 4), columns=st.integers(8, 60), data=st.data())
def test_transposed_views_of_wide_bases_split_correctly_and_in_fewer_pieces(ranks: int, rows: int, columns: int, data: st.DataObject) -> None:
    """A transposed (sliced, reversed) view of a wide base beside a C-ordered output: the pieces
    tile the shape with each operand's owner, and are never more than cutting index by index."""
    base = np.arange(rows * columns, dtype=np.int64).reshape(rows, columns)
    first = data.draw(st.integers(0, columns // 2))
    window = base[:, first:][:, :: data.draw(st.sampled_from([1, -1, 2]))].T
    operands = [(View(1, np.dtype("i8"), int(window.flat[0]) * 8, window.shape, window.strides), block(ranks, rows * columns, 8, row=columns))]
    if data.draw(st.booleans()):
        operands.append((View(2, np.dtype("i8"), 0, window.shape, (window.shape[1] * 8, 8)), block(ranks, window.size, 8, row=window.shape[1])))
    pieces = split(operands, window.shape, 1 << 20)
    check_pieces(operands, window.shape, pieces)
    assert len(pieces) <= len(exhaustive_split(operands, window.shape))

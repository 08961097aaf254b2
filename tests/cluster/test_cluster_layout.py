"""Layouts and the splitting of views into pieces that each lie on one rank (no MPI needed)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.bytecode import View
from shoal.cluster.layout import (
    TooFragmented,
    block,
    broadcast_to,
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
        split([(transposed, layout)], (30, 30), 10)
    assert split([(transposed, layout)], (0, 30), 10) == []

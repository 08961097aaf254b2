"""Block geometry: base-blocks, view-blocks and sub-view-blocks (paper 003 §5.2)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from shoal.bytecode import View
from shoal.engine.blocks.geometry import (
    base_blocks,
    broadcast_strides,
    collapse,
    extent,
    partition,
    sub_view_blocks,
    view_extent,
)

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


def test_broadcast_strides_repeat_unit_and_missing_axes_and_reject_mismatches():
    view = View(1, F8, 0, (3, 1), (8, 8))
    assert broadcast_strides(view, (2, 3, 4)) == (0, 8, 0)
    with pytest.raises(ValueError, match="does not broadcast"):
        broadcast_strides(view, (2, 4))
    with pytest.raises(ValueError, match="does not broadcast"):
        broadcast_strides(View(1, F8, 0, (2, 3), (24, 8)), (3,))


@pytest.mark.parametrize("strides", [(64, 8), (-64, 8), (64, -8), (-64, -8), (0, 8)])
def test_extent_is_the_byte_range_numpy_touches(strides):
    offset = 27 * 8
    low, high = extent(offset, (3, 4), strides, 8)
    touched = [offset + i * strides[0] + j * strides[1] for i in range(3) for j in range(4)]
    assert (low, high) == (min(touched), max(touched) + 8)
    assert view_extent(View(1, F8, offset, (3, 4), strides)) == (low, high)
    assert extent(offset, (0, 4), strides, 8) == (offset, offset)


def test_partition_options_bound_the_split_axis_and_cover_the_space():
    shape = (2, 3, 50)
    for kwargs in ({}, {"outer_only": True}, {"deepest": 1}, {"deepest": -1}, {"shallowest": 1}):
        part = partition(shape, 20, **kwargs)
        covered = sum(math.prod(part.block_shape(i)) for i in range(len(part)))
        assert covered == math.prod(shape), kwargs
    assert partition(shape, 20, outer_only=True).axis == 0
    assert partition(shape, 20, deepest=1).axis == 1
    assert len(partition(shape, 20, deepest=-1)) == 1
    assert partition(shape, 1000, shallowest=1).axis == 1  # one view-block per index of axis 0
    assert len(partition((0, 5), 8)) == 0
    with pytest.raises(ValueError, match="at least one axis"):
        partition((), 8)

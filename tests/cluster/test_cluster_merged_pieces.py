"""Pieces of an instruction over a block-cyclic operand are joined where their owners agree.

A row-split operand's cuts along an axis are where its owner *may* change (both edges of a slab
that spans ranks), and the block-cyclic splitter takes their product: lattice Boltzmann's
``np.where(obstacle, ...)`` over its (9, ny, nx) populations came out as 18 pieces at 2 ranks, 9
node-engine instructions a rank where one does. Joined, the pieces still each have every operand
on one rank (inside one block), and cover the iteration box once."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.bytecode import View
from shoal.cluster.layout import block, broadcast_to, by_components, owner, split, sub_view

COMPONENTS = 9


def operands(ranks: int, rows: int, columns: int, rows_known: bool) -> tuple[list, tuple[int, ...]]:
    """``out = where(mask[None], a, b)``: out, a and b (COMPONENTS, rows, columns) float64 split by
    components, the bool mask (rows, columns) split in ranges, broadcast over the components."""
    shape = (COMPONENTS, rows, columns)
    grid = by_components(ranks, shape, 8)
    mask = block(ranks, rows * columns, 1, columns if rows_known else 1, 8)
    whole = View(1, np.dtype("f8"), 0, shape, (rows * columns * 8, columns * 8, 8))
    flat = View(4, np.dtype("?"), 0, (rows, columns), (columns, 1))
    return [(whole, grid), (broadcast_to(flat, shape), mask), (View(2, whole.dtype, 0, shape, whole.strides), grid), (View(3, whole.dtype, 0, shape, whole.strides), grid)], shape


def check(pieces: list, listed: list, shape: tuple[int, ...]) -> None:
    covered = np.zeros(shape, dtype=np.int64)
    for box, owners in pieces:
        covered[tuple(slice(low, high) for low, high in box)] += 1
        assert tuple(owner(sub_view(view, box), layout) for view, layout in listed) == owners
        assert min(owners) >= 0
    assert (covered == 1).all()
    for (first, owners), (second, others) in itertools.combinations(pieces, 2):  # nothing left to join
        for axis in range(len(shape)):
            if owners != others or any(first[a] != second[a] for a in range(len(shape)) if a != axis):
                continue
            if first[axis][1] == second[axis][0] or second[axis][1] == first[axis][0]:
                union = tuple((min(first[a][0], second[a][0]), max(first[a][1], second[a][1])) if a == axis else first[a] for a in range(len(shape)))
                assert tuple(owner(sub_view(view, union), layout) for view, layout in listed) != owners


@pytest.mark.parametrize("rows_known", [True, False])
def test_a_mask_over_components_splits_into_one_piece_a_rank(rows_known: bool) -> None:
    listed, shape = operands(2, 256, 512, rows_known)
    pieces = split(listed, shape, 4096)
    check(pieces, listed, shape)
    assert [owners for _, owners in pieces] == [(0, 0, 0, 0), (1, 1, 1, 1)]


@settings(max_examples=60, deadline=None)
@given(ranks=st.integers(2, 4), rows=st.integers(8, 300), columns=st.integers(1, 40), rows_known=st.booleans())
def test_joined_pieces_keep_every_operand_on_one_rank(ranks: int, rows: int, columns: int, rows_known: bool) -> None:
    listed, shape = operands(ranks, rows, columns, rows_known)
    check(split(listed, shape, 1 << 16), listed, shape)

"""The block-cyclic layout (no MPI needed): every element on exactly one rank, views split into
sub-view-blocks whose local views read exactly the elements the global view names."""

from __future__ import annotations

import dataclasses
import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from shoal.bytecode import View
from shoal.cluster.cyclic import (
    CyclicLayout,
    aligned,
    cyclic,
    grid_shape,
    normalised,
    parse_block,
    process_grid,
)
from shoal.cluster.layout import TooFragmented, broadcast_to, owner, split, sub_view, whole_on


def parts(layout: CyclicLayout) -> list[np.ndarray]:
    """Each rank's local array of a base holding its own element numbers."""
    return [layout.part(np.arange(layout.size), rank) for rank in range(layout.ranks)]


def global_values(view: View, itemsize: int) -> np.ndarray:
    """The element numbers ``view`` reads from a base holding its own element numbers."""
    index = np.zeros(view.shape, dtype=np.int64) + view.offset
    for axis, (n, stride) in enumerate(zip(view.shape, view.strides)):
        shape = [1] * len(view.shape)
        shape[axis] = n
        index = index + (np.arange(n) * stride).reshape(shape)
    return index // itemsize


def shifted(layout: CyclicLayout, data: st.DataObject) -> CyclicLayout:
    """``layout`` with its dealing started at a random origin on every axis (or not)."""
    if not data.draw(st.booleans()):
        return layout
    origin = tuple(data.draw(st.integers(0, b * p - 1)) for b, p in zip(layout.block, layout.procs))
    return dataclasses.replace(layout, origin=origin)


def check_pieces(operands: list[tuple[View, CyclicLayout]], shape: tuple[int, ...], pieces, held: dict[int, list[np.ndarray]]) -> None:
    """The pieces cover every index once; in each piece every operand's part, read through its
    local view on the rank the piece names, gives the elements the global view names."""
    seen = np.zeros(shape, dtype=np.int64)
    for box, owners in pieces:
        seen[tuple(slice(low, high) for low, high in box)] += 1
        for (view, layout), rank in zip(operands, owners):
            part = sub_view(view, box)
            if not isinstance(layout, CyclicLayout):
                assert rank == 0
                continue
            local = layout.local_view(part, rank, 1)
            assert local.offset >= 0
            np.testing.assert_array_equal(held[id(layout)][rank][global_values(local, layout.itemsize)], global_values(part, layout.itemsize))
    assert (seen == 1).all()


@settings(max_examples=150, deadline=None)
@given(ranks=st.integers(1, 6), grid=st.lists(st.integers(1, 9), min_size=1, max_size=3), data=st.data())
def test_every_element_lives_on_exactly_one_rank(ranks: int, grid: list[int], data: st.DataObject) -> None:
    block = data.draw(st.lists(st.integers(1, 9), max_size=len(grid)))
    layout = shifted(cyclic(ranks, tuple(grid), 8, block), data)
    held = parts(layout)
    assert sorted(np.concatenate(held).tolist()) == list(range(layout.size))
    assert [len(part) for part in held] == [layout.local_count(rank) for rank in range(ranks)]
    for rank, part in enumerate(held):  # and each element where locate says it is
        for position, element in enumerate(part.tolist()):
            located = layout.locate(View(1, np.dtype("f8"), element * 8, (), ()))
            assert located == (rank, position * 8, ())


def test_blocks_are_dealt_cyclically_over_a_process_grid() -> None:
    layout = cyclic(4, (10, 12), 8, (3, 5))
    assert layout.procs == (2, 2) and layout.block == (3, 5)
    owners = np.array([[layout.owner(View(1, np.dtype("f8"), (i * 12 + j) * 8, (), ())) for j in range(12)] for i in range(10)])
    expected = np.array([[2 * ((i // 3) % 2) + (j // 5) % 2 for j in range(12)] for i in range(10)])
    np.testing.assert_array_equal(owners, expected)
    assert layout.local_shape(0) == (6, 7) and layout.local_shape(3) == (4, 5)
    rows = cyclic(3, (37, 53), 8)  # automatic: whole rows, 4 blocks per rank, a flat range
    assert rows.grid == (37 * 53,) and rows.block == (4 * 53,) and rows.procs == (3,)
    assert process_grid(6, 2) == (3, 2) and process_grid(3, 2) == (3, 1) and process_grid(5, 1) == (5,)
    assert normalised(CyclicLayout(8, (4, 5, 6), (2, 5, 6), (2, 1, 1))) == CyclicLayout(8, (120,), (60,), (2,), (0,), 30)
    assert parse_block("64x32") == (64, 32) and parse_block("auto") == () and parse_block(" 7 ") == (7,)
    with pytest.raises(ValueError, match="SHOAL_CLUSTER_BLOCK"):
        parse_block("0x3")
    assert grid_shape(View(1, np.dtype("f8"), 0, (4, 5), (40, 8)), 20) == (4, 5)
    assert grid_shape(View(1, np.dtype("f8"), 0, (5, 4), (8, 40)), 20) is None
    assert grid_shape(View(1, np.dtype("f8"), 0, (20,), (8,)), 20) == (20,)


def draw_view(data: st.DataObject, grid: tuple[int, ...], itemsize: int) -> np.ndarray:
    """A random NumPy view of an array of element numbers of ``grid``'s shape: slices with steps
    (negative too), transposes, a flat view, a diagonal."""
    base = np.arange(int(np.prod(grid))).reshape(grid)
    kind = data.draw(st.sampled_from(["slices", "slices", "transpose", "flat", "diagonal"]))
    if kind == "flat":
        flat = base.reshape(-1)
        start = data.draw(st.integers(0, flat.size - 1))
        return flat[start :: data.draw(st.sampled_from([1, 2, -1, 3]))]
    if kind == "diagonal" and len(grid) == 2:
        return np.diagonal(base, offset=data.draw(st.integers(-grid[0] + 1, grid[1] - 1)))
    index = []
    for n in grid:
        low = data.draw(st.integers(0, n - 1))
        high = data.draw(st.integers(low + 1, n))
        step = data.draw(st.sampled_from([1, 1, 2, -1, -2]))
        index.append(slice(low, high, step) if step > 0 else slice(high - 1, low - 1 if low else None, step))
    window = base[tuple(index)]
    return window.T if kind == "transpose" else window


def as_view(window: np.ndarray, base: int, itemsize: int) -> View:
    offset = int(window.flat[0]) * itemsize if window.size else 0
    return View(base, np.dtype(f"i{itemsize}"), offset, window.shape, tuple(s // 8 * itemsize for s in window.strides))


@settings(max_examples=200, deadline=None)
@given(
    ranks=st.integers(1, 5),
    grid=st.lists(st.integers(1, 8), min_size=1, max_size=3).map(tuple),
    data=st.data(),
)
def test_split_gives_sub_view_blocks_whose_local_views_read_the_right_elements(ranks: int, grid: tuple[int, ...], data: st.DataObject) -> None:
    block = data.draw(st.lists(st.integers(1, 5), max_size=len(grid)))
    layout = shifted(cyclic(ranks, grid, 8, block), data)
    held = {id(layout): parts(layout)}
    window = draw_view(data, grid, 8)
    view = as_view(window, 1, 8)
    operands: list = [(view, layout)]
    if data.draw(st.booleans()):  # a second operand of another layout, broadcast or not
        other_grid = window.shape
        other = cyclic(ranks, other_grid, 8, data.draw(st.lists(st.integers(1, 4), max_size=len(other_grid))))
        held[id(other)] = parts(other)
        operands.append((View(2, np.dtype("i8"), 0, other_grid, tuple(int(s) for s in np.empty(other_grid, dtype="i8").strides)), other))
    if window.ndim >= 1 and data.draw(st.booleans()):  # a row of rank 0's, broadcast
        row = broadcast_to(View(3, np.dtype("i8"), 0, (window.shape[-1],), (8,)), window.shape)
        operands.append((row, whole_on(0, ranks, window.shape[-1], 8)))
    pieces = split(operands, window.shape, 1 << 20)
    check_pieces(operands, window.shape, pieces, held)


def test_transposed_and_reversed_views_cut_at_block_bounds_only() -> None:
    layout = cyclic(3, (37, 53), 8, (5, 7))
    transposed = View(1, np.dtype("f8"), 52 * 8, (53, 37), (-8, 53 * 8))
    pieces = split([(transposed, layout)], transposed.shape, 1 << 20)
    assert len(pieces) == 8 * 8  # 8 blocks of columns x 8 blocks of rows
    whole = View(1, np.dtype("f8"), 0, (37, 53), (53 * 8, 8))
    assert len(split([(whole, layout)], whole.shape, 1 << 20)) == 64
    with pytest.raises(TooFragmented):
        split([(whole, layout)], whole.shape, 10)


def test_a_wide_element_lies_in_one_block_or_has_no_owner() -> None:
    layout = cyclic(2, (4, 6), 4, (2, 3))  # int32 elements read as int64 pairs
    inside = View(1, np.dtype("i8"), 0, (2,), (24,))  # elements 0-1 and 6-7: inside block (0, 0)
    assert owner(inside, layout) == 0
    across = View(1, np.dtype("i8"), 8, (), ())  # elements 2-3: two blocks of columns
    assert owner(across, layout) == -1
    real = cyclic(2, (4, 6), 16, (2, 3))  # a complex base read as its real or imaginary parts
    imaginary = View(1, np.dtype("f8"), 8, (4, 6), (96, 16))
    pieces = split([(imaginary, real)], imaginary.shape, 100)
    assert len(pieces) == 4
    for box, (rank,) in pieces:
        local = real.local_view(sub_view(imaginary, box), rank, 1)
        assert local.offset % 16 == 8 and local.strides[1] == 16


def test_a_planner_that_drops_a_piece_is_caught() -> None:
    """The oracle above fails on a split that loses one sub-view-block."""
    layout = cyclic(3, (9, 9), 8, (2, 2))
    view = View(1, np.dtype("i8"), 0, (9, 9), (72, 8))
    pieces = split([(view, layout)], view.shape, 1 << 20)
    with pytest.raises(AssertionError):
        check_pieces([(view, layout)], view.shape, pieces[:-1], {id(layout): parts(layout)})


def test_owner_mapping_agrees_with_an_element_by_element_definition() -> None:
    layout = cyclic(3, (7, 8), 8, (2, 3))
    held = parts(layout)
    for i, j in itertools.product(range(7), range(8)):
        rank, offset, _ = layout.locate(View(1, np.dtype("f8"), (i * 8 + j) * 8, (), ()))
        assert held[rank][offset // 8] == i * 8 + j
        assert rank == ((i // 2) % 3) * 1 + 0 * ((j // 3) % 1)


@settings(max_examples=100, deadline=None)
@given(ranks=st.integers(2, 4), rows=st.integers(4, 30), columns=st.integers(1, 9), data=st.data())
def test_a_new_base_aligned_with_a_view_lives_where_the_view_does(ranks: int, rows: int, columns: int, data: st.DataObject) -> None:
    """A temporary combined with a view of a row-blocked base needs no message."""
    other = cyclic(ranks, (rows, columns), 8)
    origin = data.draw(st.integers(0, other.block[0] // columns * ranks - 1)) * columns  # whole rows
    other = dataclasses.replace(other, origin=(origin,))
    top = data.draw(st.integers(0, rows - 1))
    height = data.draw(st.integers(1, rows - top))
    left = data.draw(st.integers(0, columns - 1))
    width = data.draw(st.integers(1, columns - left))
    shape = (height, width) if data.draw(st.booleans()) or width > 1 else (height,)
    view = View(1, np.dtype("f8"), (top * columns + left) * 8, shape, (columns * 8, 8)[: len(shape)])
    temp = aligned(other, view, shape, 8)
    assert temp is not None
    assert sorted(np.concatenate(parts(temp)).tolist()) == list(range(temp.size))
    whole = View(2, np.dtype("f8"), 0, shape, (width * 8, 8)[: len(shape)])
    pieces = split([(whole, temp), (view, other)], shape, 1 << 20)
    assert all(len(set(owners)) == 1 for _, owners in pieces)  # no piece needs a message
    check_pieces([(whole, temp), (view, other)], shape, pieces, {id(temp): parts(temp), id(other): parts(other)})
    assert aligned(other, View(1, np.dtype("f8"), 0, (height, 1), (8, 8)), (height, 1), 8) is None or 1 in (columns, height)

"""Block geometry: base-blocks, view-blocks and sub-view-blocks (paper 003 §5.2).

A base is split into *base-blocks* of ``block_size`` elements of the base's dtype (a byte range
each). An operation's iteration space is split into *view-blocks*: a run of rows along one axis,
the axes after it whole, the axes before it fixed. Each view-block of a view is a strided window
that may straddle base-blocks; its *sub-view-blocks* are its pieces that each lie in one
base-block. The dependency system registers one access per base-block a view-block touches.

All offsets and strides here are in bytes, as in :class:`shoal.bytecode.View`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from shoal.bytecode import View


@dataclass(frozen=True, slots=True)
class Mapping:
    """A view laid over an iteration space: where element ``idx`` lives in its base (bytes)."""

    base: int
    itemsize: int
    offset: int
    strides: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Partition:
    """View-blocks of an iteration ``shape``: axis ``axis`` split into runs of ``rows`` rows.

    Every view-block has shape ``(r1 - r0, *shape[axis + 1:])`` for one index of the axes before
    ``axis``; ``starts`` lists each block's outer index and first row, ``stops`` its end row.
    """

    shape: tuple[int, ...]
    axis: int
    rows: int
    outer: tuple[tuple[int, ...], ...]
    starts: tuple[int, ...]
    stops: tuple[int, ...]

    def __len__(self) -> int:
        return len(self.starts)

    def block_shape(self, index: int) -> tuple[int, ...]:
        return (self.stops[index] - self.starts[index], *self.shape[self.axis + 1 :])

    def block_offset(self, index: int, mapping_offset: int, strides: tuple[int, ...]) -> int:
        """Byte offset of view-block ``index`` of a mapping with ``strides`` over ``shape``."""
        offset = mapping_offset + self.starts[index] * strides[self.axis]
        for position, stride in zip(self.outer[index], strides):
            offset += position * stride
        return offset


def broadcast_strides(view: View, shape: tuple[int, ...]) -> tuple[int, ...]:
    """``view``'s strides over iteration ``shape`` under NumPy broadcasting (0 where repeated)."""
    extra = len(shape) - view.ndim
    if extra < 0:
        raise ValueError(f"view of shape {view.shape} does not broadcast to {shape}")
    strides = [0] * extra
    for n, stride, target in zip(view.shape, view.strides, shape[extra:]):
        if n == target:
            strides.append(stride if n != 1 else 0)
        elif n == 1:
            strides.append(0)
        else:
            raise ValueError(f"view of shape {view.shape} does not broadcast to {shape}")
    return tuple(strides)


def collapse(shape: tuple[int, ...], strides: list[tuple[int, ...]]) -> tuple[tuple[int, ...], list[tuple[int, ...]]]:
    """Drop unit axes and merge neighbouring axes that every stride list walks contiguously.

    The result has at least one axis: a single element is laid out as shape ``(1,)``.
    """
    if math.prod(shape) == 0:
        return shape, list(strides)
    keep = [axis for axis, n in enumerate(shape) if n != 1]
    if not keep:
        return (1,), [(0,) for _ in strides]
    new_shape = [shape[axis] for axis in keep]
    new_strides = [[s[axis] for axis in keep] for s in strides]
    axis = len(new_shape) - 2
    while axis >= 0:
        inner = new_shape[axis + 1]
        if all(s[axis] == s[axis + 1] * inner for s in new_strides):
            new_shape[axis] *= inner
            del new_shape[axis + 1]
            for s in new_strides:
                s[axis] = s[axis + 1]
                del s[axis + 1]
        axis -= 1
    return tuple(new_shape), [tuple(s) for s in new_strides]


def partition(
    shape: tuple[int, ...], block_elements: int, outer_only: bool = False, deepest: int | None = None, shallowest: int = 0
) -> Partition:
    """Split iteration ``shape`` into view-blocks of about ``block_elements`` elements.

    ``outer_only`` splits only the first axis (view-blocks of at least one row, however long);
    ``deepest`` is the deepest axis that may be split (-1: one view-block); the axes before
    ``shallowest`` are never part of a view-block (each view-block holds one index of them).
    """
    if not shape:
        raise ValueError("partition needs at least one axis; lay 0-d spaces out as (1,)")
    if math.prod(shape) == 0:
        return Partition(shape, 0, 1, (), (), ())
    last = len(shape) - 1 if deepest is None else min(deepest, len(shape) - 1)
    axis = shallowest
    while not outer_only and axis < last and math.prod(shape[axis + 1 :]) > block_elements:
        axis += 1
    inner = math.prod(shape[axis + 1 :])
    rows = shape[0] if last < 0 else max(1, block_elements // inner)
    outer_shape = shape[:axis]
    outer: list[tuple[int, ...]] = []
    starts: list[int] = []
    stops: list[int] = []
    for flat in range(math.prod(outer_shape)):
        index = _unravel(flat, outer_shape)
        for start in range(0, shape[axis], rows):
            outer.append(index)
            starts.append(start)
            stops.append(min(start + rows, shape[axis]))
    return Partition(shape, axis, rows, tuple(outer), tuple(starts), tuple(stops))


def _unravel(flat: int, shape: tuple[int, ...]) -> tuple[int, ...]:
    index = []
    for n in reversed(shape):
        flat, position = divmod(flat, n)
        index.append(position)
    return tuple(reversed(index))


def extent(offset: int, shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> tuple[int, int]:
    """The half-open byte range ``[low, high)`` that a strided window touches."""
    if math.prod(shape) == 0:
        return (offset, offset)
    low = high = offset
    for n, stride in zip(shape, strides):
        if stride < 0:
            low += (n - 1) * stride
        else:
            high += (n - 1) * stride
    return (low, high + itemsize)


def view_extent(view: View) -> tuple[int, int]:
    """``view.byte_extent()`` without NumPy calls (this is on the planning hot path)."""
    return extent(view.offset, view.shape, view.strides, view.dtype.itemsize)


def base_blocks(low: int, high: int, block_bytes: int) -> range:
    """Indices of the base-blocks that bytes ``[low, high)`` touch."""
    if high <= low:
        return range(0)
    return range(low // block_bytes, (high - 1) // block_bytes + 1)


def sub_view_blocks(view: View, block_bytes: int) -> list[tuple[int, View]]:
    """Split ``view`` into pieces that each lie in one base-block, as ``(base_block, piece)``.

    Pieces are found by splitting along the outermost axis first and only going deeper where a
    piece still straddles a boundary, so an aligned view yields one piece per base-block.
    """
    pieces: list[tuple[int, View]] = []
    _split(view, block_bytes, pieces)
    return pieces


def _split(view: View, block_bytes: int, pieces: list[tuple[int, View]]) -> None:
    low, high = view.byte_extent()
    if high <= low:
        return
    first, last = low // block_bytes, (high - 1) // block_bytes
    if first == last:
        pieces.append((first, view))
        return
    if view.ndim == 0:
        pieces.append((first, view))  # one element never straddles: itemsize divides blocks
        return
    n, stride = view.shape[0], view.strides[0]
    inner_shape, inner_strides = view.shape[1:], view.strides[1:]
    start = 0
    while start < n:
        # grow a run of rows while it stays inside one base-block
        stop = start + 1
        row = View(view.base, view.dtype, view.offset + start * stride, inner_shape, inner_strides)
        row_low, row_high = row.byte_extent()
        if row_high > row_low and row_low // block_bytes != (row_high - 1) // block_bytes:
            for block, piece in _row_pieces(row, block_bytes):
                pieces.append((block, _prepend_axis(piece, stride)))
            start = stop
            continue
        block = row_low // block_bytes
        while stop < n:
            candidate = View(view.base, view.dtype, view.offset + start * stride, (stop + 1 - start, *inner_shape), (stride, *inner_strides))
            c_low, c_high = candidate.byte_extent()
            if c_low // block_bytes != block or (c_high - 1) // block_bytes != block:
                break
            stop += 1
        pieces.append((block, View(view.base, view.dtype, view.offset + start * stride, (stop - start, *inner_shape), (stride, *inner_strides))))
        start = stop


def _row_pieces(row: View, block_bytes: int) -> list[tuple[int, View]]:
    pieces: list[tuple[int, View]] = []
    _split(row, block_bytes, pieces)
    return pieces


def _prepend_axis(piece: View, stride: int) -> View:
    return View(piece.base, piece.dtype, piece.offset, (1, *piece.shape), (stride, *piece.strides))

"""Where the elements of a base live, and how a view splits into pieces that each live on one rank.

A base at or above the distribution threshold is split into one contiguous range of elements per
rank (a block distribution of its flat element range, so of its leading axis: the ranges are
whole rows of the first multi-dimensional C-ordered view that covers the base, which keeps the
halo of a stencil along that axis to one row per neighbour). A base that leads with a few
components over a grid (``(9, ny, nx)``: :func:`components_first`) is split along its second
axis instead, every component of a point on one rank (:func:`by_components`). A smaller base
lives whole on rank 0. Each rank keeps its range as one base of its own node engine.

With ``SHOAL_CLUSTER_LAYOUT=block-cyclic`` a distributed base has a
:class:`shoal.cluster.cyclic.CyclicLayout` instead (blocks dealt cyclically over a process grid);
:func:`owner`, :func:`split` and :func:`local_part` take either kind.

An instruction runs piece by piece: :func:`split` cuts the iteration box of an instruction into
sub-boxes in which every operand (a view, broadcast to the box's shape) touches the elements of
a single rank, so a piece either reads local memory or needs one message from one other rank.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from shoal.bytecode import View
from shoal.cluster.cyclic import CyclicLayout, cyclic, pairwise_runs, sorted_unique

Box = tuple[tuple[int, int], ...]
COMPONENTS = 16  # a leading axis shorter than this, before one of this many rows per rank, holds components


class TooFragmented(Exception):
    """Splitting would need more pieces than allowed (a view that crosses every range, say a
    transpose): the instruction runs on gathered data instead."""


@dataclass(frozen=True)
class Layout:
    """The ranges of a base: rank ``r`` owns elements ``[starts[r], starts[r + 1])`` and keeps
    ``halo`` elements more on each side (within the base) as a copy of its neighbours' that may
    be out of date: :meth:`local_range` is what its local base holds."""

    itemsize: int
    starts: tuple[int, ...]
    halo: int = 0
    replicated: bool = False  # every rank holds every element (rank 0 owns them: a small read-only base)

    @property
    def size(self) -> int:
        return self.starts[-1]

    def count(self, rank: int) -> int:
        return self.starts[rank + 1] - self.starts[rank]

    def local_range(self, rank: int) -> tuple[int, int]:
        """The elements ``[first, end)`` rank ``rank`` holds: its own and its halo."""
        if self.replicated:
            return 0, self.size
        begin, end = self.starts[rank], self.starts[rank + 1]
        if begin == end or not self.halo:
            return begin, end
        return max(0, begin - self.halo), min(self.size, end + self.halo)

    @functools.cached_property
    def local_bytes(self) -> tuple[tuple[int, int], ...]:
        """Per rank, the bytes ``[low, high)`` of the base that its local base holds (planning
        asks for them tens of thousands of times a batch)."""
        item = self.itemsize
        return tuple((begin * item, end * item) for begin, end in map(self.local_range, range(len(self.starts) - 1)))

    def local_count(self, rank: int) -> int:
        begin, end = self.local_range(rank)
        return end - begin

    def byte_starts(self) -> np.ndarray:
        return np.asarray(self.starts, dtype=np.int64) * self.itemsize

    def owner_of_bytes(self, low: int, high: int) -> int:
        """The rank holding bytes ``[low, high)`` of the base, or -1 when they span two ranks."""
        starts = self.starts
        item = self.itemsize
        for rank in range(len(starts) - 1):
            if starts[rank] * item <= low and high <= starts[rank + 1] * item:
                return rank
        return -1

    @property
    def distributed(self) -> bool:
        return sum(1 for rank in range(len(self.starts) - 1) if self.count(rank)) > 1

    @property
    def at_root(self) -> bool:
        """True if rank 0 holds every element: not distributed, and not whole on another rank
        (a small temporary kept beside its operand, :mod:`shoal.cluster.row_alignment`)."""
        return self.count(0) == self.size

    def local_view(self, view: View, rank: int, local_base: int) -> View:
        """``view`` (of elements ``rank`` holds) as a view of ``rank``'s local base."""
        return View(local_base, view.dtype, view.offset - self.local_bytes[rank][0], view.shape, view.strides)

    def part(self, data: np.ndarray, rank: int) -> np.ndarray:
        """``rank``'s local part of the base's flat ``data``."""
        begin, end = self.local_range(rank)
        return np.ascontiguousarray(data[begin:end])


AnyLayout = Layout | CyclicLayout


def whole_on(rank: int, ranks: int, size: int, itemsize: int) -> Layout:
    """A layout keeping all ``size`` elements on ``rank``."""
    starts = [0] * (rank + 1) + [size] * (ranks - rank)
    return Layout(itemsize, tuple(starts))


def on_every_rank(ranks: int, size: int, itemsize: int) -> Layout:
    """A layout keeping all ``size`` elements on every rank, rank 0 owning them: a small base that
    no instruction writes is read where each piece runs, without a message."""
    return Layout(itemsize, whole_on(0, ranks, size, itemsize).starts, replicated=True)


def everywhere(layout: AnyLayout) -> bool:
    """True if every rank holds every element of a base laid out as ``layout``."""
    return isinstance(layout, Layout) and layout.replicated


def held_at(view: View, layout: AnyLayout, rank: int) -> bool:
    """True if ``rank`` holds every element of ``view`` (of a base laid out as ``layout``)."""
    return everywhere(layout) or owner(view, layout) == rank


@functools.lru_cache(maxsize=4096)  # a loop's temporaries ask for the same layouts every batch
def block(ranks: int, size: int, itemsize: int, row: int = 1, halo_rows: int = 0) -> Layout:
    """Elements split into ``ranks`` contiguous ranges of whole rows of ``row`` elements, as even
    as rows allow (the first ranges get no fewer rows than the last); each rank keeps
    ``halo_rows`` rows of its neighbours besides.

    With halos and no row known (a base that came from Python: the wire carries its data flat),
    a base of a square number of elements is taken for a square grid (rows of its square root);
    any other gets ``halo_rows`` times the square root of its size as its halo."""
    row = row if row > 0 and size % row == 0 else 1
    halo = halo_rows * row if row > 1 else 0
    if halo_rows and row == 1:
        side = math.isqrt(size)
        if side > 1 and side * side == size:
            row = side
        halo = halo_rows * max(1, side)
    rows = size // row
    starts = (*tuple(row * ((rows * rank + ranks - 1) // ranks) for rank in range(ranks)), size)
    return Layout(itemsize, starts, halo)


def local_part(data: np.ndarray, layout: AnyLayout, rank: int, already: bool) -> np.ndarray:
    """Rank ``rank``'s part of a base's ``data`` (``already``: ``data`` is that part)."""
    if already:
        return data
    return layout.part(data, rank)


def components_first(grid: tuple[int, ...], ranks: int) -> bool:
    """Whether a base of ``grid`` (three or more axes) leads with an axis of a few components
    (lattice Boltzmann's 9 populations, colour channels, x/y/z) over a large grid: its blocks then
    split the second axis and keep every component of a point on one rank, so an operation that
    combines components (a sum over them, indexing them) needs no message."""
    return len(grid) >= 3 and grid[0] < COMPONENTS and grid[1] >= COMPONENTS * ranks


def by_components(ranks: int, grid: tuple[int, ...], itemsize: int) -> CyclicLayout:
    """The layout of a base for which :func:`components_first` holds: one block of the second
    axis per rank, every component inside it."""
    return cyclic(ranks, grid, itemsize, (grid[0], -(-grid[1] // ranks)))


def row_length(view: View, size: int) -> int:
    """Elements in one row of ``view`` if it is a C-ordered view of the whole base with two or
    more axes (so its leading axis is the one to split), else 1."""
    if view.ndim < 2 or view.offset != 0 or view.size != size or not view.is_contiguous():
        return 1
    return view.size // max(1, view.shape[0])


def sub_view(view: View, box: Box) -> View:
    """The part of ``view`` inside ``box``."""
    offset = view.offset
    shape = []
    for (low, high), stride in zip(box, view.strides):
        offset += low * stride
        shape.append(high - low)
    return View(view.base, view.dtype, offset, tuple(shape), view.strides)


def broadcast_to(view: View, shape: tuple[int, ...]) -> View:
    """``view`` broadcast to ``shape`` (strides 0 on the axes it repeats)."""
    extra = len(shape) - view.ndim
    strides = [0] * extra + [stride if n != 1 or target == 1 else 0 for n, stride, target in zip(view.shape, view.strides, shape[extra:])]
    return View(view.base, view.dtype, view.offset, tuple(shape), tuple(strides))


def split(operands: Sequence[tuple[View, AnyLayout]], shape: tuple[int, ...], limit: int) -> list[tuple[Box, tuple[int, ...]]]:
    """Cut ``shape``'s index box into pieces in which each operand (already broadcast to
    ``shape``) lies on one rank; each piece comes with its operands' ranks. An empty shape has
    no pieces.

    Raises :class:`TooFragmented` past ``limit`` pieces."""
    pieces: list[tuple[Box, tuple[int, ...]]] = []
    if any(n == 0 for n in shape):
        return pieces
    if any(isinstance(layout, CyclicLayout) for _, layout in operands):
        _split_grid(operands, shape, pieces, limit)
    else:
        _split(operands, tuple((0, n) for n in shape), 0, pieces, limit)  # type: ignore[arg-type]
    return pieces


def owner(view: View, layout: AnyLayout) -> int:
    """The rank holding every element of ``view`` (for a block-cyclic layout: inside one block,
    as one strided view of its local base), or -1 if there is none."""
    if isinstance(layout, CyclicLayout):
        return layout.owner(view)
    low, high = view.byte_extent()
    return layout.owner_of_bytes(low, high)


def _key(view: View, layout: AnyLayout) -> int:
    """What must not change within a piece: the owner, or for a block-cyclic layout the block."""
    if isinstance(layout, CyclicLayout):
        return layout.block_key(view)
    return owner(view, layout)


def _split_grid(operands: Sequence[tuple[View, AnyLayout]], shape: tuple[int, ...], pieces: list, limit: int) -> None:
    """Cut ``shape`` along every axis where some block-cyclic operand enters another block (a
    product of cuts, exact for slices, reversals and transposes); a box of the product that
    still has no owner for every operand is cut by :func:`_split_blocks`."""
    bounds = _grid_bounds(operands, shape)
    if math.prod(len(axis_bounds) for axis_bounds in bounds) > limit:
        raise TooFragmented(f"more than {limit} pieces")
    found: list[tuple[Box, tuple[int, ...]]] = []
    for box in itertools.product(*bounds):
        owners = tuple(owner(sub_view(view, box), layout) for view, layout in operands)
        if all(rank >= 0 for rank in owners):
            found.append((box, owners))
        else:
            _split_blocks(operands, box, 0, found, limit)
    if any(not isinstance(layout, CyclicLayout) and layout.distributed for _, layout in operands):
        found = _merged(operands, found)  # only row-split operands cut where no owner changes
    for piece in found:
        _add(pieces, *piece, limit)


def _merged(operands: Sequence[tuple[View, AnyLayout]], pieces: list[tuple[Box, tuple[int, ...]]]) -> list[tuple[Box, tuple[int, ...]]]:
    """``pieces`` with neighbours joined along each axis, until none can be, where the joined box
    still has every operand on one rank (inside one block), the same ranks as both halves; in
    the order of their boxes. A row-split operand's cuts are where its owner *may* change (the
    edges of a slab that spans ranks): lattice Boltzmann's ``np.where(obstacle, ...)`` over its
    populations was cut into 18 pieces at 2 ranks, 2 being enough."""
    joining = len(pieces) > 1
    while joining:
        joining = False
        for axis in reversed(range(len(pieces[0][0]))):
            count = len(pieces)
            pieces = _joined_along(operands, pieces, axis)
            joining = joining or len(pieces) < count
    return sorted(pieces)


def _joined_along(operands: Sequence[tuple[View, AnyLayout]], pieces: list[tuple[Box, tuple[int, ...]]], axis: int) -> list[tuple[Box, tuple[int, ...]]]:
    """One pass of :func:`_merged` along ``axis``: the pieces sorted so that neighbours along it
    follow each other, each joined to the one before where it can be."""
    others = [a for a in range(len(pieces[0][0])) if a != axis]
    pieces = sorted(pieces, key=lambda piece: (*(piece[0][a] for a in others), piece[0][axis]))
    joined = [pieces[0]]
    for box, owners in pieces[1:]:
        last_box, last_owners = joined[-1]
        if last_owners == owners and last_box[axis][1] == box[axis][0] and all(last_box[a] == box[a] for a in others):
            union = (*box[:axis], (last_box[axis][0], box[axis][1]), *box[axis + 1 :])
            if tuple(owner(sub_view(view, union), layout) for view, layout in operands) == owners:
                joined[-1] = (union, owners)
                continue
        joined.append((box, owners))
    return joined


def _grid_bounds(operands: Sequence[tuple[View, AnyLayout]], shape: tuple[int, ...]) -> list[list[tuple[int, int]]]:
    """Per axis of ``shape``, the runs between the indices where some distributed operand's
    owner (or block) may change."""
    cuts: list[set[int]] = [set() for _ in shape]
    for view, layout in operands:
        if isinstance(layout, CyclicLayout):
            found = layout.cuts(view)
            if found is None:
                continue
        else:
            if not layout.distributed:
                continue
            found = [[int(k) for k in _axis_candidates(view, layout, axis, n)] for axis, n in enumerate(shape)]
        for axis, axis_cuts in enumerate(found):
            cuts[axis].update(k for k in axis_cuts if 0 < k < shape[axis])
    return [list(itertools.pairwise([0, *sorted(axis_cuts), n])) for axis_cuts, n in zip(cuts, shape)]


def _axis_candidates(view: View, layout: Layout, axis: int, length: int) -> np.ndarray:
    """Indices along ``axis`` of ``view`` at which its owner under the row layout may change."""
    first = sub_view(view, tuple((0, 1) if a == axis else (0, n) for a, n in enumerate(view.shape)))
    start, stop = first.byte_extent()
    return _candidates([(start, stop, view.strides[axis], layout)], length)


def _split_blocks(operands: Sequence[tuple[View, AnyLayout]], box: Box, axis: int, pieces: list, limit: int) -> None:
    """:func:`_split` for operands of which some are block-cyclic: the same cutting, with each
    candidate run checked whole (a run of one block's rows is affine only if its ends are)."""
    owners = tuple(owner(sub_view(view, box), layout) for view, layout in operands)
    if all(rank >= 0 for rank in owners):
        _add(pieces, box, owners, limit)
        return
    while axis < len(box) and box[axis][1] - box[axis][0] == 1:
        axis += 1
    if axis == len(box):
        raise TooFragmented("an element spans two ranks or blocks")
    low, high = box[axis]
    length = high - low

    def slab(begin: int, end: int) -> Box:
        return (*box[:axis], (low + begin, low + end), *box[axis + 1 :])

    offsets = _block_candidates(operands, slab(0, 1), axis, length)
    keys = np.array([[_key(sub_view(view, slab(k, k + 1)), layout) for k in offsets.tolist()] for view, layout in operands], dtype=np.int64)
    bounds = [*offsets.tolist(), length]
    for first, last in pairwise_runs(keys):
        begin, end = bounds[first], bounds[last]
        if (keys[:, first] >= 0).all():
            piece = slab(begin, end)
            found = tuple(owner(sub_view(view, piece), layout) for view, layout in operands)
            if all(rank >= 0 for rank in found):
                _add(pieces, piece, found, limit)
                continue
        for index in range(begin, end):
            _split_blocks(operands, slab(index, index + 1), axis + 1, pieces, limit)


def _block_candidates(operands: Sequence[tuple[View, AnyLayout]], first: Box, axis: int, length: int) -> np.ndarray:
    """Indices along ``axis`` at which some operand's owner or block may change, 0 first (every
    index when a block-cyclic operand crosses too many blocks to list them)."""
    extents = []
    found = [np.zeros(1, dtype=np.int64)]
    for view, layout in operands:
        stride = view.strides[axis]
        if stride == 0:
            continue
        start, stop = sub_view(view, first).byte_extent()
        if not isinstance(layout, CyclicLayout):
            extents.append((start, stop, stride, layout))
            continue
        item = layout.itemsize
        span = (length - 1) * stride
        low = (min(start, start + span)) // item
        high = (max(stop, stop + span) - 1) // item
        bounds = layout.boundaries(low, high)
        if bounds is None:
            return np.arange(length, dtype=np.int64)
        for edge in (start, stop - 1):
            quotient = np.floor_divide(bounds * item - edge, stride)
            found += [quotient, quotient + 1]
    found.append(_candidates(extents, length))
    candidates = sorted_unique(np.concatenate(found))
    return candidates[(candidates >= 0) & (candidates < length)]


def _split(operands: Sequence[tuple[View, Layout]], box: Box, axis: int, pieces: list, limit: int) -> None:
    owners = tuple(owner(sub_view(view, box), layout) for view, layout in operands)
    if all(owner >= 0 for owner in owners):
        _add(pieces, box, owners, limit)
        return
    while axis < len(box) and box[axis][1] - box[axis][0] == 1:
        axis += 1
    if axis == len(box):
        raise TooFragmented("an element spans two ranks")
    low, high = box[axis]
    extents = []
    for view, layout in operands:
        start, stop = sub_view(view, (*box[:axis], (low, low + 1), *box[axis + 1:])).byte_extent()
        extents.append((start, stop, view.strides[axis], layout))
    # Owners are evaluated only where one may change, not at every index: linear in the ranks,
    # not in the axis (a 10^6-element operand cost 0.15 s an instruction).
    offsets = _candidates(extents, high - low)
    table = np.empty((len(operands), len(offsets)), dtype=np.int64)
    for row, (start, stop, stride, layout) in enumerate(extents):
        step = offsets * stride
        table[row] = _owners(start + step, stop + step, layout)
    changes = np.flatnonzero((table[:, 1:] != table[:, :-1]).any(axis=0)) + 1
    columns = [0, *changes.tolist()]
    bounds = [*offsets[columns].tolist(), high - low]
    for column_index, (begin, end) in zip(columns, itertools.pairwise(bounds), strict=True):
        column = table[:, column_index]
        if (column >= 0).all():
            _add(pieces, (*box[:axis], (low + begin, low + end), *box[axis + 1:]), tuple(int(x) for x in column), limit)
        elif end - begin == 1 or not _split_as_grid(operands, (*box[:axis], (low + begin, low + end), *box[axis + 1:]), end - begin, pieces, limit):
            for index in range(begin, end):
                _split(operands, (*box[:axis], (low + index, low + index + 1), *box[axis + 1:]), axis + 1, pieces, limit)


def _split_as_grid(operands: Sequence[tuple[View, Layout]], box: Box, run: int, pieces: list, limit: int) -> bool:
    """Try to cut ``box`` as a product of cuts along every axis (where some operand's owner may
    change), each cell on one rank for every operand: a run of a transposed operand's rows
    spans ranks while each of its columns does not, and cutting the run index by index made a
    piece per element (``a.T + 1`` of a (2, 2^19) array: 2^20 pieces, minutes at the ranks).
    Adds the cells and returns True, or adds nothing and returns False; also where there would
    be more cells than the run has indices (cutting index by index then gives fewer pieces)."""
    views = [(sub_view(view, box), layout) for view, layout in operands]
    shape = tuple(high - low for low, high in box)
    bounds = _grid_bounds(views, shape)
    if math.prod(len(axis_bounds) for axis_bounds in bounds) > min(limit - len(pieces), run):
        return False
    table = np.array([[owner(sub_view(view, cell), layout) for view, layout in views] for cell in itertools.product(*bounds)])
    if table.min() < 0:
        return False
    table = table.reshape(*(len(axis_bounds) for axis_bounds in bounds), len(views))
    merged = []
    for axis, axis_bounds in enumerate(bounds):  # neighbours with the same owners everywhere are one cell
        differs = (np.diff(table, axis=axis) != 0).any(axis=tuple(a for a in range(table.ndim) if a != axis))
        keep = [0, *(np.flatnonzero(differs) + 1).tolist()]
        table = table.take(keep, axis=axis)
        ends = [axis_bounds[k][0] for k in keep[1:]] + [axis_bounds[-1][1]]
        merged.append(list(zip([axis_bounds[k][0] for k in keep], ends)))
    for index, cell in zip(itertools.product(*(range(len(m)) for m in merged)), itertools.product(*merged)):
        piece = tuple((low + first, low + last) for (low, _), (first, last) in zip(box, cell))
        _add(pieces, piece, tuple(int(rank) for rank in table[index]), limit)
    return True


def _candidates(extents: list[tuple[int, int, int, Layout]], length: int) -> np.ndarray:
    """Indices along an axis of ``length`` at which some operand's owner may change, 0 first:
    the byte range of index ``i`` is ``[start + i * stride, stop + i * stride)``, so its owner
    changes only next to where ``start`` or ``stop`` crosses a rank's first byte."""
    found = [np.zeros(1, dtype=np.int64)]
    for start, stop, stride, layout in extents:
        if stride == 0:
            continue
        bounds = layout.byte_starts()
        for edge in (start, stop):
            quotient = np.floor_divide(bounds - edge, stride)
            found += [quotient, quotient + 1]
    candidates = sorted_unique(np.concatenate(found))
    return candidates[(candidates >= 0) & (candidates < length)]


def _add(pieces: list, box: Box, owners: tuple[int, ...], limit: int) -> None:
    pieces.append((box, owners))
    if len(pieces) > limit:
        raise TooFragmented(f"more than {limit} pieces")


def _owners(lows: np.ndarray, highs: np.ndarray, layout: Layout) -> np.ndarray:
    """The rank holding each byte range ``[lows[i], highs[i])``, or -1 where it spans two."""
    starts = layout.byte_starts()
    ranks = np.searchsorted(starts, lows, side="right") - 1
    ranks = np.clip(ranks, 0, len(starts) - 2)
    fits = (lows >= starts[ranks]) & (highs <= starts[ranks + 1])
    return np.where(fits, ranks, -1)

"""N-dimensional block-cyclic distribution of a base (paper 003 §4-§5, ScaLAPACK's layout).

A base is seen as a *grid* (the shape of the first C-ordered view of the whole base in its batch,
else its flat element range) cut into *base-blocks* of a block shape; block ``(b_0, b_1, ...)``
lives on the rank at process-grid coordinates ``(b_0 mod P_0, b_1 mod P_1, ...)``. Each rank
keeps its blocks as one local C-ordered array (ScaLAPACK's local matrix): grid index ``g_a`` is
local index ``(g_a // (B_a P_a)) B_a + g_a mod B_a``. Inside one block that map is a shift, so a
view's part inside one block (a *sub-view-block*) is one strided view of the rank's local base.

A view is *grid-affine* over a box when the grid coordinates of its elements are an affine
function of its indices, which holds exactly when they stay inside the grid at the box's corners
(:meth:`CyclicLayout.locate`). A piece of an instruction has an owner when every operand's part
is grid-affine and inside one block; :func:`split_blocks` cuts an instruction's box into such
pieces. Trailing axes whose block spans the whole axis are merged into the one before them, so
row-cyclic blocks (``(b, N)``) are blocks of whole rows of the flat range and every view of them,
reshaped or not, is affine.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from shoal.bytecode import View

CYCLES = 4  # blocks per rank along the split axis when no block shape is given
LOCATED_KEPT = 1 << 14  # views a layout remembers the place of


@dataclass(frozen=True)
class CyclicLayout:
    """``grid`` cut into blocks of ``block`` dealt over the process grid ``procs`` (its product
    is the number of ranks). Grid index ``g`` of an axis sits at ``g + origin`` of the dealing, so
    a base can be aligned with a view of another (:func:`aligned`); ``row`` is the elements per
    index of the leading axis of the grid the layout was made for (before :func:`normalised`
    merged axes). Has no halo."""

    itemsize: int
    grid: tuple[int, ...]
    block: tuple[int, ...]
    procs: tuple[int, ...]
    origin: tuple[int, ...] = ()
    row: int = 1
    halo: int = 0

    def __post_init__(self) -> None:
        if not self.origin:
            object.__setattr__(self, "origin", (0,) * len(self.grid))
        object.__setattr__(self, "_located", {})  # locate's answers: a loop meets the same views again

    @property
    def size(self) -> int:
        return math.prod(self.grid)

    @property
    def ranks(self) -> int:
        return math.prod(self.procs)

    def coords(self, rank: int) -> tuple[int, ...]:
        return tuple(_unravel(rank, self.procs))

    def local_shape(self, rank: int) -> tuple[int, ...]:
        """The shape of the local array of ``rank``'s blocks."""
        return _local_shape(self, rank)

    def _local_shape(self, rank: int) -> tuple[int, ...]:
        coords = self.coords(rank)
        return tuple(_count(o + n, b, p, c) - _count(o, b, p, c) for n, b, p, c, o in zip(self.grid, self.block, self.procs, coords, self.origin))

    def local_count(self, rank: int) -> int:
        return math.prod(self.local_shape(rank))

    def local_range(self, rank: int) -> tuple[int, int]:
        return 0, self.local_count(rank)

    @property
    def distributed(self) -> bool:
        return sum(1 for rank in range(self.ranks) if self.local_count(rank)) > 1

    @property
    def at_root(self) -> bool:
        """True if rank 0 holds every element (a base that is neither distributed nor elsewhere)."""
        return self.local_count(0) == self.size

    def indices(self, rank: int) -> list[np.ndarray]:
        """Per grid axis, the grid indices ``rank`` holds, in local order."""
        found = []
        for n, b, p, c, o in zip(self.grid, self.block, self.procs, self.coords(rank), self.origin):
            every = np.arange(n)
            found.append(every[((every + o) // b) % p == c])
        return found

    def part(self, data: np.ndarray, rank: int) -> np.ndarray:
        """``rank``'s local array of the base's flat ``data``, flat."""
        grid = np.asarray(data).reshape(self.grid)
        return np.ascontiguousarray(grid[np.ix_(*self.indices(rank))]).reshape(-1)

    # ------------------------------------------------------------------ views

    def _elements(self, view: View) -> tuple[int, list[tuple[int, int]], int] | None:
        """``view`` in elements of the base: (first element, [(extent, stride)] of the axes
        with more than one index, byte offset inside the element), or None when its elements
        do not fall on the base's elements."""
        item = self.itemsize
        width = view.dtype.itemsize
        inside = view.offset % item
        if any(n > 1 and s % item for n, s in zip(view.shape, view.strides)):
            return None
        axes = [(int(n), int(s) // item) for n, s in zip(view.shape, view.strides) if n > 1]
        if width > item:  # an element of the view covers several of the base's
            if inside or width % item:
                return None
            axes.append((width // item, 1))
        elif inside + width > item:
            return None
        return view.offset // item, axes, inside

    def locate(self, view: View) -> tuple[int, int, tuple[int, ...]] | None:
        """(rank, local byte offset, local byte strides) of ``view`` when it is grid-affine and
        inside one block, else None."""
        key = (view.offset, view.shape, view.strides, view.dtype)
        located: dict = self._located  # type: ignore[attr-defined]
        try:
            return located[key]
        except KeyError:
            pass
        if len(located) >= LOCATED_KEPT:
            located.clear()
        found = located[key] = self._locate(view)
        return found

    def _locate(self, view: View) -> tuple[int, int, tuple[int, ...]] | None:
        if view.size == 0:
            return None
        found = self._elements(view)
        if found is None:
            return None
        first, axes, inside = found
        if len(self.grid) == 1:
            return self._locate_flat(view, first, axes, inside)
        size = self.size
        grid = self.grid
        start = _unravel(first, grid)
        lows, highs = list(start), list(start)
        steps = []
        for n, stride in axes:
            neighbour = first + stride
            if not 0 <= neighbour < size:
                return None
            step = [a - b for a, b in zip(_unravel(neighbour, grid), start)]
            steps.append(step)
            for a, d in enumerate(step):
                if d < 0:
                    lows[a] += (n - 1) * d
                else:
                    highs[a] += (n - 1) * d
        rank = 0
        for a, (n, b, p, o) in enumerate(zip(grid, self.block, self.procs, self.origin)):
            if lows[a] < 0 or highs[a] >= n or (lows[a] + o) // b != (highs[a] + o) // b:
                return None
            rank = rank * p + ((lows[a] + o) // b) % p
        local_strides = _local_strides(self, rank)
        item = self.itemsize
        coords = self.coords(rank)
        offset = sum(self._local_index(a, g, coords[a]) * s for a, (g, s) in enumerate(zip(start, local_strides)))
        if len(axes) > len([n for n in view.shape if n > 1]) and sum(d * s for d, s in zip(steps[-1], local_strides)) != 1:
            return None  # a wide element whose base elements are not consecutive here
        strides = []
        position = 0
        for n in view.shape:
            if n > 1:
                strides.append(sum(d * s for d, s in zip(steps[position], local_strides)) * item)
                position += 1
            else:
                strides.append(0)
        return rank, offset * item + inside, tuple(strides)

    def cuts(self, view: View) -> list[list[int]] | None:
        """Per axis of ``view``, the indices at which its elements enter another block, when
        ``view`` is grid-affine (exact for views whose axes each move along one grid axis:
        slices, reversals, transposes, broadcasts), else None."""
        found = self._elements(view)
        if found is None or view.size == 0:
            return None
        first, axes, _ = found
        if len(axes) != len([n for n in view.shape if n > 1]):
            return None
        start = _unravel(first, self.grid)
        steps = []
        for _, stride in axes:
            if not 0 <= first + stride < self.size:
                return None
            steps.append([a - b for a, b in zip(_unravel(first + stride, self.grid), start)])
        lows, highs = list(start), list(start)
        for (n, _), step in zip(axes, steps):
            for a, d in enumerate(step):
                if d < 0:
                    lows[a] += (n - 1) * d
                else:
                    highs[a] += (n - 1) * d
        if any(low < 0 or high >= n for low, high, n in zip(lows, highs, self.grid)):
            return None
        result: list[list[int]] = []
        position = 0
        for n in view.shape:
            if n <= 1:
                result.append([])
                continue
            step = steps[position]
            position += 1
            found_cuts: set[int] = set()
            for a, d in enumerate(step):
                if d == 0:
                    continue
                b = self.block[a]
                edge_shift = self.origin[a]
                # the other axes move grid axis a by at most this much: both ends may cross
                rest_low = lows[a] - (min(0, (n - 1) * d))
                rest_high = highs[a] - (max(0, (n - 1) * d))
                for edge in {rest_low + edge_shift, rest_high + edge_shift}:
                    end = edge + (n - 1) * d
                    for m in range(min(edge, end) // b + 1, max(edge, end) // b + 1):
                        k = -((edge - m * b) // d) if d > 0 else (m * b - edge) // d + 1
                        if 0 < k < n:
                            found_cuts.add(k)
            result.append(sorted(found_cuts))
        return result

    def _locate_flat(self, view: View, first: int, axes: list[tuple[int, int]], inside: int) -> tuple[int, int, tuple[int, ...]] | None:
        """:meth:`locate` for a one-dimensional grid: local strides are the view's own."""
        low = high = first
        for n, stride in axes:
            if stride < 0:
                low += (n - 1) * stride
            else:
                high += (n - 1) * stride
        b, o = self.block[0], self.origin[0]
        if low < 0 or high >= self.grid[0] or (low + o) // b != (high + o) // b:
            return None
        rank = ((low + o) // b) % self.procs[0]
        offset = self._local_index(0, first, rank) * self.itemsize + inside
        return rank, offset, tuple(0 if n <= 1 else stride for n, stride in zip(view.shape, view.strides))

    def _local_index(self, axis: int, g: int, coord: int) -> int:
        b, p, o = self.block[axis], self.procs[axis], self.origin[axis]
        v = g + o
        return (v // (b * p)) * b + v % b - _count(o, b, p, coord)

    def owner(self, view: View) -> int:
        found = self.locate(view)
        return -1 if found is None else found[0]

    def block_key(self, view: View) -> int:
        """A number naming the block holding all of ``view`` (grid-affine), else -1."""
        found = self.locate(view)
        if found is None:
            return -1
        first = self._elements(view)
        assert first is not None
        key = 0
        for g, n, b, o in zip(_unravel(first[0], self.grid), self.grid, self.block, self.origin):
            key = key * (-(-(n + o) // b)) + (g + o) // b
        return key

    def local_view(self, view: View, rank: int, local_base: int) -> View:
        """``view`` (inside one block that ``rank`` holds) as a view of ``rank``'s local base."""
        found = self.locate(view)
        if found is None or found[0] != rank:
            raise ValueError(f"view {view} is not one sub-view-block of rank {rank}")
        _, offset, strides = found
        return View(local_base, view.dtype, offset, view.shape, strides)

    def boundaries(self, low: int, high: int) -> np.ndarray | None:
        """The first elements of blocks and rows of every axis in ``[low, high]`` (where a view's
        owner or its affinity may change), or None when there are more than ``4 * (high - low)``
        cheap ones to list."""
        found = []
        stride = self.size
        for n, b, o in zip(self.grid, self.block, self.origin):
            period = stride
            stride //= n
            first_period, last_period = low // period, high // period
            starts = np.concatenate([[0], np.arange(b - o % b, n, b, dtype=np.int64)]) * stride
            if (last_period - first_period + 1) * len(starts) > 4 * (high - low) + 64:
                return None
            periods = np.arange(first_period, last_period + 1, dtype=np.int64) * period
            found.append((periods[:, None] + starts[None, :]).reshape(-1))
        every = sorted_unique(np.concatenate(found)) if found else np.zeros(0, dtype=np.int64)
        return every[(every >= low) & (every <= high)]


@functools.lru_cache(maxsize=1024)
def _local_shape(layout: CyclicLayout, rank: int) -> tuple[int, ...]:
    return layout._local_shape(rank)


@functools.lru_cache(maxsize=1024)
def _local_strides(layout: CyclicLayout, rank: int) -> tuple[int, ...]:
    """C-order strides, in elements, of ``rank``'s local array."""
    shape = layout.local_shape(rank)
    strides = [1] * len(shape)
    for a in range(len(shape) - 2, -1, -1):
        strides[a] = strides[a + 1] * shape[a + 1]
    return tuple(strides)


def _count(x: int, b: int, p: int, c: int) -> int:
    """How many of the dealing's positions ``[0, x)`` process coordinate ``c`` holds."""
    return (x // (b * p)) * b + min(b, max(0, x % (b * p) - c * b))


def _unravel(element: int, grid: tuple[int, ...]) -> list[int]:
    index = []
    for n in reversed(grid):
        element, g = divmod(element, n)
        index.append(g)
    index.reverse()
    return index


def grid_shape(view: View, size: int) -> tuple[int, ...] | None:
    """The grid a base is seen as: ``view``'s shape when it is a C-ordered view of the whole
    base, else None (unknown: the flat range, in automatic blocks)."""
    if view.ndim < 1 or view.offset != 0 or view.size != size or not view.is_contiguous():
        return None
    return tuple(int(n) for n in view.shape)


def process_grid(ranks: int, split_axes: int) -> tuple[int, ...]:
    """``ranks`` factored over ``split_axes`` axes as evenly as divisors allow, larger first."""
    if split_axes <= 1:
        return (ranks,)[:split_axes] if split_axes else ()
    first = next(d for d in range(math.isqrt(ranks), ranks + 1) if ranks % d == 0 and d * d >= ranks)
    return (first, *process_grid(ranks // first, split_axes - 1))


def cyclic(ranks: int, grid: tuple[int, ...], itemsize: int, block: Sequence[int] = ()) -> CyclicLayout:
    """The block-cyclic layout of ``grid`` over ``ranks``: ``block`` gives the block extent of
    the leading axes (the rest whole); without it, blocks of whole rows (whole elements for a
    flat grid), ``CYCLES`` per rank, as even as rows allow. The same arguments give the same
    object, whose answers to :meth:`CyclicLayout.locate` a loop's next base then reuses."""
    return _cyclic(ranks, tuple(int(n) for n in grid), itemsize, tuple(int(b) for b in block))


@functools.lru_cache(maxsize=256)
def _cyclic(ranks: int, grid: tuple[int, ...], itemsize: int, block: tuple[int, ...]) -> CyclicLayout:
    if not block:
        rows = max(1, -(-grid[0] // (CYCLES * ranks)))
        shape = (rows, *grid[1:])
    else:
        shape = tuple(max(1, min(int(b), n)) for b, n in zip(block, grid)) + grid[len(block):]
    split = [a for a, (b, n) in enumerate(zip(shape, grid)) if b < n] or [0]
    factors = iter(process_grid(ranks, len(split)))
    procs = tuple(next(factors) if a in split else 1 for a in range(len(grid)))
    return normalised(CyclicLayout(itemsize, grid, shape, procs))


def aligned(other: CyclicLayout, view: View, grid: tuple[int, ...], itemsize: int) -> CyclicLayout | None:
    """The layout of a new base of ``grid`` whose index ``i`` of its leading axis lives where row
    ``r0 + i`` of ``view`` (of a base laid out by ``other``, in blocks of whole rows) does: a
    temporary combined with ``view`` then needs no message. None when ``view`` does not step
    one row of ``other`` per index of its leading axis, with the rest inside one row."""
    row = other.row
    if len(other.grid) != 1 or other.block[0] % row or other.origin[0] % row or view.shape != grid:
        return None
    item = other.itemsize
    if view.dtype.itemsize != item or view.offset % item or any(s % item for s in view.strides) or not grid or 0 in grid:
        return None
    strides = [s // item for s in view.strides]
    if grid[0] > 1 and strides[0] != row:
        return None
    first = view.offset // item
    rest_low = sum(min(0, (n - 1) * s) for n, s in zip(grid[1:], strides[1:]))
    rest_high = sum(max(0, (n - 1) * s) for n, s in zip(grid[1:], strides[1:]))
    if first % row + rest_low < 0 or first % row + rest_high >= row:
        return None
    rows, procs = other.block[0] // row, other.procs[0]
    elements = math.prod(grid[1:])
    origin = ((first // row + other.origin[0] // row) % (rows * procs)) * elements
    return CyclicLayout(itemsize, (math.prod(grid),), (rows * elements,), (procs,), (origin,), elements)


def normalised(layout: CyclicLayout) -> CyclicLayout:
    """``layout`` with each trailing axis whose block spans it whole merged into the axis
    before it (the same local arrays and owners; more views are affine)."""
    grid, block, procs, origin = list(layout.grid), list(layout.block), list(layout.procs), list(layout.origin)
    row = math.prod(grid[1:])
    while len(grid) > 1 and block[-1] == grid[-1] and procs[-1] == 1 and origin[-1] == 0:
        n = grid.pop()
        block.pop()
        procs.pop()
        origin.pop()
        grid[-1] *= n
        block[-1] *= n
        origin[-1] *= n
    return CyclicLayout(layout.itemsize, tuple(grid), tuple(block), tuple(procs), tuple(origin), row)


def parse_block(text: str) -> tuple[int, ...]:
    """``SHOAL_CLUSTER_BLOCK``: ``auto`` (or empty) or extents such as ``64`` or ``64x64``."""
    text = text.strip().lower()
    if text in ("", "auto"):
        return ()
    try:
        extents = tuple(int(part) for part in text.replace(",", "x").split("x"))
    except ValueError:
        raise ValueError(f"SHOAL_CLUSTER_BLOCK must be auto or extents such as 64 or 64x64, got {text!r}") from None
    if not extents or min(extents) < 1:
        raise ValueError(f"SHOAL_CLUSTER_BLOCK extents must be positive, got {text!r}")
    return extents


def sorted_unique(values: np.ndarray) -> np.ndarray:
    """``np.unique(values)`` for a 1-D integer array, without its first call's import of
    ``numpy.ma`` (6-15 ms in every rank's first batch)."""
    values = np.sort(values)
    if values.size < 2:
        return values
    return values[np.concatenate(([True], values[1:] != values[:-1]))]


def pairwise_runs(keys: np.ndarray) -> list[tuple[int, int]]:
    """The runs ``[begin, end)`` of columns of ``keys`` (operands x columns) with equal keys."""
    changes = np.flatnonzero((keys[:, 1:] != keys[:, :-1]).any(axis=0)) + 1
    bounds = [0, *changes.tolist(), keys.shape[1]]
    return list(itertools.pairwise(bounds))

"""Deferred writes: in-place updates fused with the reads they overwrite.

``grid[1:-1, 1:-1] = 0.2 * (grid[1:-1, 1:-1] + grid[:-2, 1:-1] + ...)`` reads the grid through
shifted mappings and writes it through another; NumPy evaluates the right-hand side into a whole
temporary first. Here the write is *deferred* instead: each view-block (a run of rows along the
first axis) computes into a block buffer, then stores the buffer into the base, except the rows
that other view-blocks still read. Those are *held* and stored by a commit operation that runs
after every view-block reading them is done. Within a view-block every read precedes the store,
so the update moves the grid through memory twice (read, write) instead of six times.

The rows other view-blocks read follow from the mappings: a read through byte offset ``d`` from
the write's, with the write's strides, row stride ``s`` and row byte span ``w``, reaches the
old value of row ``p - k`` while computing row ``p`` only where ``|d + k·s| < w``.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass

import numpy as np

from shoal.engine.blocks.geometry import extent


@dataclass(frozen=True, slots=True)
class Reach:
    """How far reads of a deferred write's base look from the row being computed.

    ``behind``: rows back (so the last ``behind`` rows of a view-block are read by later ones);
    ``ahead``: rows forward (the first ``ahead`` rows are read by earlier view-blocks).
    """

    behind: int
    ahead: int

    def held_rows(self, start: int, stop: int, total: int) -> tuple[int, int]:
        """Rows held at the front and back of view-block ``[start, stop)`` of ``total`` rows."""
        rows = stop - start
        front = 0 if start == 0 else min(self.ahead, rows)
        back = 0 if stop == total else min(self.behind, rows - front)
        return front, back


def reach(
    shape: tuple[int, ...],
    offset: int,
    strides: tuple[int, ...],
    itemsize: int,
    reads: list[tuple[int, tuple[int, ...]]],
) -> Reach:
    """The reach of ``reads`` (byte offset, strides) against a write at ``offset``/``strides``.

    Reads with other strides are disjoint from the write (the planner allows nothing else).
    """
    rows = shape[0]
    row_stride = strides[0]
    low, high = extent(0, shape[1:], strides[1:], itemsize)
    span = high - low
    behind = ahead = 0
    for read_offset, read_strides in reads:
        if read_strides != strides or rows < 2:
            continue
        distance = read_offset - offset
        step = row_stride
        if step < 0:
            distance, step = -distance, -step
        if step == 0:
            behind = ahead = rows - 1
            continue
        # integers k with -span < distance + k * step < span
        smallest = (-span - distance) // step + 1
        largest = -((distance - span) // step) - 1
        if largest > 0:
            behind = max(behind, min(largest, rows - 1))
        if smallest < 0:
            ahead = max(ahead, min(-smallest, rows - 1))
    return Reach(behind, ahead)


_buffers = threading.local()


def block_buffer(slot: int, dtype: np.dtype, shape: tuple[int, ...]) -> np.ndarray:
    """A per-thread scratch array of ``shape`` for deferred slot ``slot``, reused across blocks."""
    pool: dict[tuple[int, str], np.ndarray] | None = getattr(_buffers, "pool", None)
    if pool is None:
        pool = _buffers.pool = {}
    size = math.prod(shape)
    key = (slot, dtype.str)
    buffer = pool.get(key)
    if buffer is None or buffer.size < size:
        buffer = pool[key] = np.empty(size, dtype)
    return buffer[:size].reshape(shape)


def store(computed: np.ndarray, target: np.ndarray, front: int, back: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Store a view-block's rows into ``target`` except those held; return the held rows."""
    rows = computed.shape[0]
    np.copyto(target[front : rows - back], computed[front : rows - back])
    if not (front or back):
        return None
    return computed[:front].copy(), computed[rows - back :].copy()


def commit(held: tuple[np.ndarray, np.ndarray], target: np.ndarray) -> None:
    """Store the rows :func:`store` held, once no other view-block reads them."""
    front, back = held
    rows = target.shape[0]
    np.copyto(target[: front.shape[0]], front)
    np.copyto(target[rows - back.shape[0] :], back)

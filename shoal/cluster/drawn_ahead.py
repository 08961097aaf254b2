"""Parts of random draws drawn ahead, while rank 0 still runs the program's Python.

A large remembered draw (:mod:`shoal.drawn`) reaches the other ranks as its recipe only when a
batch uses it, and each rank then draws its part before it can plan: Jacobi's 2000 x 2000 grid
took the second of 2 ranks 14-19 ms there, and rank 0, which has its part already, waited that
long at the first halo exchange. Rank 0 therefore announces a draw when the program makes it
(``DRAW_AHEAD``: the recipe and the array's shape). Each rank draws the part the row layout
would give it (:func:`shoal.cluster.layout.block`, as :meth:`shoal.cluster.plan.Planner.new_layouts`
lays out a base of that shape) while it idles, and keeps the last few. When a batch then sends the
same recipe, a rank whose part lies inside what it drew takes it from there; any other part is
drawn as before. Either way the part is the draw's, bit for bit."""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
import psutil

from shoal import drawn
from shoal.bytecode.verify import MAX_NDIM
from shoal.cluster.layout import block, components_first

KEPT = 8  # draws a rank keeps drawn ahead; the oldest goes first
MAX_BYTES = 1 << 40  # the largest draw announced (a session's payload bound)
ITEMSIZE = np.dtype(np.float64).itemsize  # draws remembered as recipes are float64


def announce(made: drawn.Recipe, shape: tuple[int, ...]) -> tuple[bytes, list[int]]:
    """Rank 0: the ``DRAW_AHEAD`` payload (the recipe) and integers (the shape) of a draw."""
    return made.encode().tobytes(), list(shape)


def decode(payload: bytes, ints: list[int]) -> tuple[bytes, drawn.Recipe, tuple[int, ...]]:
    """A ``DRAW_AHEAD`` command from rank 0, checked: the recipe's bytes, the recipe, the shape."""
    made = drawn.Recipe.decode(np.frombuffer(payload, dtype=np.uint8))
    if not 1 <= len(ints) <= MAX_NDIM:
        raise ValueError(f"rank 0 announced a draw of {len(ints)} axes")
    if any(extent < 0 for extent in ints):
        raise ValueError(f"rank 0 announced a draw of shape {tuple(ints)}")
    if math.prod(ints) * ITEMSIZE > MAX_BYTES:
        raise ValueError(f"rank 0 announced a draw of shape {tuple(ints)}, past {MAX_BYTES} bytes")
    return payload, made, tuple(ints)


def expected_range(shape: tuple[int, ...], rank: int, ranks: int, min_bytes: int, halo_rows: int) -> tuple[int, int] | None:
    """The elements ``[begin, end)`` of a float64 base of ``shape`` that ``rank`` would hold under
    the row layout, or None where it would hold none or the base would not be split in ranges."""
    size = math.prod(shape)
    if ranks < 2 or size < ranks or size * ITEMSIZE < min_bytes or components_first(shape, ranks):
        return None
    row = size // shape[0] if len(shape) >= 2 and shape[0] else 1
    begin, end = block(ranks, size, ITEMSIZE, row, halo_rows).local_range(rank)
    return (begin, end) if end > begin else None


class DrawsAhead:
    """The parts one rank drew ahead, by recipe."""

    def __init__(self, rank: int, ranks: int, min_bytes: int, halo_rows: int) -> None:
        self.rank = rank
        self.ranks = ranks
        self.min_bytes = min_bytes
        self.halo_rows = halo_rows
        self._parts: OrderedDict[bytes, tuple[int, np.ndarray]] = OrderedDict()
        self.taken = 0  # parts a batch took from here

    def draw(self, payload: bytes, ints: list[int]) -> None:
        """Draw this rank's expected part of the draw rank 0 announced."""
        key, made, shape = decode(payload, ints)
        found = expected_range(shape, self.rank, self.ranks, self.min_bytes, self.halo_rows)
        if found is None:
            return
        begin, end = found
        if (end - begin) * ITEMSIZE > psutil.virtual_memory().available // 2:
            return  # the program's own draw of it may still fail (and be caught): draw nothing yet
        try:
            part = made.draw(begin, end - begin)
        except MemoryError:  # the batch, if it comes, draws its part itself
            return
        self._parts[key] = (begin, part)
        self._parts.move_to_end(key)
        while len(self._parts) > KEPT:
            self._parts.popitem(last=False)

    def take(self, recipe: bytes, begin: int, count: int) -> np.ndarray | None:
        """Elements ``[begin, begin + count)`` of the draw of ``recipe`` if they were drawn ahead
        (they are then forgotten), else None."""
        found = self._parts.pop(recipe, None)
        if found is None:
            return None
        first, data = found
        if begin < first or begin + count > first + data.size:
            return None
        self.taken += 1
        if begin == first and count == data.size:
            return data
        return data[begin - first : begin - first + count].copy()

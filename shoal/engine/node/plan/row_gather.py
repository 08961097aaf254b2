"""A gather of whole rows along the first axis, by a small index array the batch carries, fused.

``np.where(obstacle, populations[OPPOSITE], collided)`` (lattice_boltzmann.py) materialised
``populations[OPPOSITE]``: 37 MB written by the gather and read back by the collision kernel,
every step. Row ``j`` of ``source[index]`` is row ``index[j]`` of ``source``, a basic view, so
when the batch carries the index's values the planner rewrites the gather as a ``copy`` from a
:class:`RowView` (the source read row by row through a table of row offsets). That copy fuses
like any element-wise instruction: its output, read only by the rest of the group, becomes a
temporary and is never allocated. A group holding a row view splits its first axis into single
rows (each view-block reads one source row, at the table's offset) and holds neither axis
reductions nor deferred writes. Indices out of range leave the gather as it is (it raises).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from shoal.bytecode import Batch, Instruction, View
from shoal.engine.reference import view_of

MAX_ROWS = 64  # index arrays up to this long are read at planning time (and key the plan cache)
ROW_ELEMENTS_MIN = 1 << 12  # shorter rows stay a gather: a view-block per row would cost more


@dataclass(frozen=True, slots=True)
class RowView(View):
    """``source[rows]`` over a group: ``shape`` is the gather's, the first stride is 0 and
    ``rows`` holds the source row each index of the first axis reads (non-negative)."""

    rows: tuple[int, ...] = ()
    source_stride: int = 0  # the source's stride along its first axis
    source_extent: tuple[int, int] = (0, 0)  # the bytes of the source the rows lie in

    def row_offsets(self) -> tuple[int, ...]:
        """Byte offset of each index of the first axis, in place of ``offset``."""
        return tuple(self.offset + row * self.source_stride for row in self.rows)


def index_values(batch: Batch, instruction: Instruction) -> np.ndarray | None:
    """The values of a gather's index array if the batch carries them and they are few."""
    if instruction.op != "gather" or instruction.attr("key") != (("array", 0),) or len(instruction.inputs) != 2:
        return None
    index = instruction.inputs[1]
    if not isinstance(index, View) or index.ndim != 1 or index.dtype.kind not in "iu" or index.shape[0] > MAX_ROWS:
        return None
    data = batch.data.get(index.base)
    if data is None or index.shape[0] == 0:
        return None
    raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
    try:
        return view_of(raw, index).copy()
    except (TypeError, ValueError):  # a view outside the data: left to the gather's own checks
        return None


def row_copy(batch: Batch, instruction: Instruction, written: set[int]) -> Instruction | None:
    """``instruction`` (a gather along axis 0) as a copy from a :class:`RowView`, or None.
    ``written`` holds the bases the batch's instructions write: an index among them may no
    longer hold the values the batch carries."""
    values = index_values(batch, instruction)
    if values is None or instruction.inputs[1].base in written:
        return None
    source = instruction.inputs[0]
    out = instruction.outputs[0]
    if not isinstance(source, View) or source.ndim < 2 or source.dtype != out.dtype:
        return None
    if out.shape != (values.shape[0], *source.shape[1:]) or out.base == source.base:
        return None
    if math.prod(source.shape[1:]) < ROW_ELEMENTS_MIN:
        return None
    count = source.shape[0]
    if values.min() < -count or values.max() >= count:
        return None  # NumPy raises IndexError: the gather runs as it is
    rows = tuple(int(v) % count for v in values)
    extent = source.byte_extent()
    view = RowView(
        source.base, source.dtype, source.offset, out.shape, (0, *source.strides[1:]),
        rows=rows, source_stride=source.strides[0], source_extent=extent,
    )
    return Instruction("copy", (out,), (view,))

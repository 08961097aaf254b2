"""A fusion group lowered to a kernel program: operand slots, typed steps, block geometry.

Slots are the kernel's operands: arrays in base memory (one per distinct element mapping),
temporaries (per element or per tile, never in base memory), deferred outputs (a block buffer
stored into base memory after the kernel, see ``shoal.engine.node.lower.deferred``) and constants
(whose values block operations read through the storage at run time: a replayed plan runs
with the new batch's constants, see ``shoal.engine.node.schedule.plan_cache``). Steps name slots by
index and carry the loop dtypes NumPy would use, so a compiled kernel computes exactly what the
reference does. :meth:`KernelProgram.structure` is a hashable value that keys the compile cache:
it holds dtypes, mappings' inner-stride classes and steps, never addresses or constant values.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from shoal.bytecode import Const, GroupOp, Instruction, View, spec
from shoal.engine.blocks.geometry import Partition, broadcast_strides, collapse, partition
from shoal.engine.node.lower.deferred import Reach, reach
from shoal.engine.node.plan.fusible import (
    loop_dtype_of,
    reduction_dtype,
    reduction_order,
    reduction_strides,
)
from shoal.engine.node.plan.plan import Group
from shoal.engine.node.plan.row_gather import RowView

ARRAY, TEMP, CONST, DEFERRED = "array", "temp", "const", "deferred"


@dataclass(frozen=True, slots=True)
class Slot:
    """One kernel operand. Arrays carry their base, byte offset and collapsed byte strides; an
    array read through a :class:`RowView` carries ``rows``, the byte offset of each index of the
    first axis (its stride there is 0; view-blocks then hold one index of it)."""

    kind: str
    dtype: np.dtype
    base: int = -1
    offset: int = 0
    strides: tuple[int, ...] = ()
    written: bool = False
    rows: tuple[int, ...] | None = None
    const: Const | None = None  # a constant's operand: run time reads its value through the storage


def block_offset(part: Partition, index: int, slot: Slot) -> int:
    """Byte offset of view-block ``index`` of array ``slot``."""
    if slot.rows is None:
        return part.block_offset(index, slot.offset, slot.strides)
    return part.block_offset(index, slot.rows[part.outer[index][0]], slot.strides)


@dataclass(frozen=True, slots=True)
class KernelStep:
    """One instruction inside a kernel: ``op`` over slots, computed in ``loop_in``/``loop_out``.

    A reduction along axes (``axis_reduction``) adds its input into its output, whose strides
    are 0 along the program's ``reduced`` axes, in the output's dtype; the first element along
    them starts from the reduction's identity and a mean divides at the last one.
    """

    op: str
    outputs: tuple[int, ...]
    inputs: tuple[int, ...]
    loop_in: tuple[np.dtype, ...] | None
    loop_out: tuple[np.dtype, ...] | None
    instruction: Instruction
    axis_reduction: bool = False


@dataclass(frozen=True, slots=True)
class ReductionStep:
    """A full reduction: per-block partials in ``acc``, folded when every block is done.

    ``position`` is how many steps come before it: it reads ``source`` as those steps left it.
    """

    op: str
    source: int
    position: int
    acc: np.dtype
    output: View
    instruction: Instruction


@dataclass(frozen=True, slots=True)
class Stencil:
    """A sweep's reads as shifts from its deferred write ``target`` (see ``sweeps``): per array
    slot ``(slot, rows, columns)``; ``halo`` columns on each side; ``behind``/``ahead`` rows.
    ``top``/``bottom``: rows each sweep of a fused pass writes fewer than the one before it, at
    the start and at the end of the first sweep's rows (a shrinking chain; 0 for equal sweeps)."""

    target: int
    shifts: tuple[tuple[int, int, int], ...]
    halo: int
    behind: int
    ahead: int
    top: int = 0
    bottom: int = 0

    def ring_rows(self, sweeps: int) -> int:
        """Rows of the rings a view-block's sweeps pass through: ``behind + ahead + 1`` per
        earlier sweep, ``behind + 1`` for the last one (stored once sweep 1 no longer reads)."""
        return (sweeps - 1) * (self.behind + self.ahead + 1) + self.behind + 1


@dataclass
class KernelProgram:
    shape: tuple[int, ...]
    slots: list[Slot]
    steps: list[KernelStep]
    reductions: list[ReductionStep]
    partition: Partition
    elements: int
    reaches: dict[int, Reach] = field(default_factory=dict)  # deferred slot -> rows other blocks read
    reduced: tuple[int, ...] = ()  # axes of ``shape`` that axis reductions reduce (whole in every view-block)
    sweeps: int = 1  # times the program runs per view-block (``shoal.engine.node.lower.sweeps``)
    stencil: Stencil | None = None  # the shifts of its reads, where ``sweeps`` > 1

    @property
    def stores_rows(self) -> bool:
        """True if the compiled kernel stores its deferred slots itself, a row behind the rows
        that still read them (a ring of rows instead of a block buffer; two or more axes)."""
        return bool(self.reaches) and len(self.partition.shape) - self.partition.axis >= 2

    def ring_shape(self, slot: int, inner: tuple[int, ...]) -> tuple[int, ...]:
        """The ring of rows deferred ``slot`` is computed into (``inner``: a view-block's row)."""
        if self.stencil is None:
            return (self.reaches[slot].behind + 1, *inner)
        return (self.stencil.ring_rows(self.sweeps), inner[0] + 2 * self.stencil.halo)

    def structure(self) -> tuple:
        """The kernel's shape as a hashable value (no addresses, no constant values)."""
        ndim = len(self.partition.shape) - self.partition.axis
        slots = tuple(
            (slot.kind, slot.dtype.str, _inner_class(slot) if slot.kind == ARRAY else "", slot.written)
            for slot in self.slots
        )
        steps = tuple(
            (s.op, s.outputs, s.inputs, tuple(d.str for d in s.loop_in or ()), tuple(d.str for d in s.loop_out or ()), s.axis_reduction)
            for s in self.steps
        )
        reductions = tuple((r.op, r.source, r.position, r.acc.str) for r in self.reductions)
        key = (ndim, slots, steps, reductions, tuple(axis - self.partition.axis for axis in self.reduced))
        if self.stencil is None:
            return key
        stencil = self.stencil
        return (*key, self.sweeps, stencil.shifts, stencil.halo, stencil.behind, stencil.ahead, stencil.top, stencil.bottom)


def _inner_class(slot: Slot) -> str:
    stride = slot.strides[-1]
    if stride == 0:
        return "broadcast"
    return "contiguous" if stride == slot.dtype.itemsize else "strided"


def lower(group: Group, temporaries: set[int], block_elements: int) -> KernelProgram:
    """Slots, typed steps and view-blocks for ``group``."""
    slot_index: dict[tuple, int] = {}
    slots: list[Slot] = []
    raw_strides: list[tuple[int, ...]] = []
    steps: list[KernelStep] = []

    def slot_of(operand: View | Const, write: bool, strides: tuple[int, ...] | None = None) -> int:
        if isinstance(operand, Const):
            slots.append(Slot(CONST, const_dtype(operand), const=operand))
            raw_strides.append(())
            return len(slots) - 1
        if strides is None:
            strides = broadcast_strides(operand, group.shape)
        rows = None
        if isinstance(operand, RowView):
            rows = operand.row_offsets()
            kind, key = ARRAY, ("rows", operand.base, operand.dtype, strides, rows)
        elif operand.base in temporaries:
            kind, key = TEMP, ("temp", operand.base)
        elif write and operand.base in group.deferred:
            kind, key = DEFERRED, ("deferred", operand.base)
        else:
            kind, key = ARRAY, ("array", operand.base, operand.dtype, operand.offset, strides)
        index = slot_index.get(key)
        if index is None:
            slots.append(Slot(kind, operand.dtype, operand.base, operand.offset, strides, rows=rows))
            raw_strides.append(strides)
            index = slot_index[key] = len(slots) - 1
        if write and not slots[index].written:
            slots[index] = replace(slots[index], written=True)
        return index

    reductions: list[ReductionStep] = []
    for instruction in group.instructions:
        if any(instruction is r for r in group.reductions):
            source = slot_of(instruction.inputs[0], False)
            reductions.append(ReductionStep(instruction.op, source, len(steps), _accumulator(instruction), instruction.outputs[0], instruction))
            continue
        if any(instruction is r for r in group.axis_reductions):
            source = slot_of(instruction.inputs[0], False)
            out = instruction.outputs[0]
            output = slot_of(out, True, reduction_strides(instruction, group.shape))
            steps.append(KernelStep(instruction.op, (output,), (source,), (out.dtype,), (out.dtype,), instruction, axis_reduction=True))
            continue
        inputs = tuple(slot_of(operand, False) for operand in instruction.inputs)
        outputs = tuple(slot_of(view, True) for view in instruction.outputs)
        loop_in, loop_out = _loop_dtypes(instruction)
        steps.append(KernelStep(instruction.op, outputs, inputs, loop_in, loop_out, instruction))

    array_ids = [i for i, slot in enumerate(slots) if slot.kind != CONST]
    shape = group.shape
    if group.reduced_axes is not None:
        order = reduction_order(len(shape), group.reduced_axes)
        shape = tuple(shape[a] for a in order)
        raw_strides = [tuple(strides[a] for a in order) if strides else () for strides in raw_strides]
    by_rows = any(slots[i].rows is not None for i in array_ids)
    if by_rows:  # the first axis stays whole: each of its indices reads its own row offset
        inner, collapsed = collapse(shape[1:], [raw_strides[i][1:] for i in array_ids])
        shape, collapsed = (shape[0], *inner), [(raw_strides[i][0], *c) for i, c in zip(array_ids, collapsed)]
    else:
        shape, collapsed = collapse(shape, [raw_strides[i] for i in array_ids])
    for i, strides in zip(array_ids, collapsed):
        slots[i] = replace(slots[i], strides=strides)
    reaches = {}
    for i, slot in enumerate(slots):
        if slot.kind == DEFERRED:
            reads = [(s.offset, s.strides) for s in slots if s.kind == ARRAY and s.base == slot.base]
            reaches[i] = reach(shape, slot.offset, slot.strides, slot.dtype.itemsize, reads)
    outputs = {step.outputs[0] for step in steps if step.axis_reduction}
    reduced = tuple(a for a in range(len(shape)) if shape[a] > 1 and any(slots[i].strides[a] == 0 for i in outputs))
    deepest = reduced[0] - 1 if reduced else None  # a view-block holds every element it adds up
    blocks = partition(shape, block_elements, outer_only=bool(reaches), deepest=deepest, shallowest=1 if by_rows else 0)
    return KernelProgram(shape, slots, steps, reductions, blocks, math.prod(group.shape), reaches, reduced)


def const_dtype(const: Const) -> np.dtype:
    value = const.value
    if isinstance(value, np.generic):
        return value.dtype
    if isinstance(value, bool):
        return np.dtype(bool)
    if isinstance(value, int):
        return np.dtype(np.int64) if -(2**63) <= value < 2**63 else np.dtype(np.uint64)
    if isinstance(value, float):
        return np.dtype(np.float64)
    return np.dtype(np.complex128)


def _loop_dtypes(instruction: Instruction) -> tuple[tuple[np.dtype, ...] | None, tuple[np.dtype, ...] | None]:
    """The dtypes NumPy computes ``instruction`` in; None where they cannot be determined."""
    op = instruction.op
    out_dtypes = tuple(view.dtype for view in instruction.outputs)
    if op in GroupOp.COPIES:
        return (out_dtypes[0],), out_dtypes
    if op == "where":
        _condition, x, y = instruction.inputs
        values = [o.dtype if isinstance(o, View) else o.value for o in (x, y)]
        try:
            common = np.result_type(*values)
        except TypeError:
            return None, None
        return (np.dtype(bool), common, common), (common,)
    ufunc = spec(op).ufunc
    if ufunc is None or instruction.attr("dtype") is not None:
        return None, None  # a forced loop dtype stays on the NumPy path
    try:
        resolved = ufunc.resolve_dtypes(tuple(loop_dtype_of(o) for o in instruction.inputs) + (None,) * ufunc.nout)
    except (TypeError, ValueError, np.exceptions.DTypePromotionError):
        return None, None
    return tuple(resolved[: ufunc.nin]), tuple(resolved[ufunc.nin :])


def _accumulator(instruction: Instruction) -> np.dtype:
    """The dtype partial results are kept in: wide floats, wrapping 64-bit integers, bools."""
    op = instruction.op
    source = instruction.inputs[0]
    if op in GroupOp.LOGICAL:
        return np.dtype(bool)
    if op in GroupOp.SELECTING:
        return source.dtype
    target = np.dtype(instruction.attr("dtype") or instruction.outputs[0].dtype) if op == "mean" else reduction_dtype(instruction)
    if op == "mean" or target.kind == "f":
        return np.dtype(np.complex128) if source.dtype.kind == "c" or target.kind == "c" else np.dtype(np.float64)
    if target.kind == "c":
        return np.dtype(np.complex128)
    if target.kind == "u":
        return np.dtype(np.uint64)
    return np.dtype(np.int64)

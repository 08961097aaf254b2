"""Running a kernel program with NumPy over tiles of one view-block.

This is the path before a kernel is compiled, and always when Numba is absent. Each step runs
through its opcode's reference implementation, so values match the reference engine exactly;
temporaries are tile-sized scratch arrays reused for every tile of the block, shared by
temporaries whose lives do not overlap. A tile holds up to ``SHOAL_TILE_ELEMENTS`` (2^18)
elements: the Python of each NumPy call, under the interpreter lock, costs more here than the
temporaries' trips to the L3 cache (docs/decisions.md). Under a
:class:`~shoal.engine.fp_signals.NumpyLog` each step's NumPy messages are kept with its
instruction, so a block's conditions are known per step without computing anything again.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from shoal import settings
from shoal.bytecode import GroupOp, spec
from shoal.engine.fp_signals import NumpyLog
from shoal.engine.node.lower.program import (
    ARRAY,
    DEFERRED,
    TEMP,
    KernelProgram,
    KernelStep,
    block_offset,
)

TILE_ELEMENTS = settings.TILE_ELEMENTS.default


def run_tiles(
    program: KernelProgram,
    index: int,
    buffer_of: Callable[[int], np.ndarray],
    block_buffers: dict[int, np.ndarray],
    constants: Mapping[int, Any],
    tile_elements: int = TILE_ELEMENTS,
) -> Any:
    """Run view-block ``index`` of ``program``; the block's partial reductions (a tuple) or None.

    Deferred slots write into ``block_buffers`` (slot -> an array of the view-block's shape);
    constant slots read their values from ``constants`` (slot -> value in the batch being run).

    Tiles are runs along the first axis of the block whose trailing axes hold at most
    ``tile_elements`` elements, the axes before it fixed: with 32768, a (2, 250, 500) block runs
    as tiles of (65, 500), so temporaries stay one size however wide the block is.
    """
    part = program.partition
    shape = part.block_shape(index)
    axis = 0
    while axis < len(shape) - 1 and math.prod(shape[axis + 1 :]) > tile_elements:
        axis += 1
    inner_shape = shape[axis + 1 :]
    tile_rows = max(1, tile_elements // max(math.prod(inner_shape), 1))
    slots = program.slots
    offsets = [block_offset(part, index, s) if s.kind == ARRAY else 0 for s in slots]
    block_strides = [s.strides[part.axis :] if s.kind == ARRAY else () for s in slots]
    buffers = [buffer_of(s.base) if s.kind == ARRAY else None for s in slots]
    scratch = scratch_arrays(program, (min(tile_rows, shape[axis]), *inner_shape))
    steps = [(_implementation(program, step), step.instruction.attr_dict(), step.outputs, step.inputs) for step in program.steps]
    reduced = [p - part.axis for p in program.reduced]  # axes of the view-block
    reductions = program.reductions
    partials: list[list[Any]] = [[] for _ in reductions]
    log = np.geterrcall()
    if type(log) is not NumpyLog:
        log = None
    for outer in np.ndindex(*shape[:axis]):
        for start in range(0, shape[axis], tile_rows):
            rows = min(tile_rows, shape[axis] - start)
            tile_shape = (rows, *inner_shape)
            operands: list[Any] = []
            for i, slot in enumerate(slots):
                if slot.kind == ARRAY:
                    strides = block_strides[i]
                    offset = offsets[i] + start * strides[axis]
                    for position, stride in zip(outer, strides):
                        offset += position * stride
                    operands.append(np.ndarray(tile_shape, slot.dtype, buffer=buffers[i], offset=offset, strides=strides[axis:]))
                elif slot.kind == TEMP:
                    operands.append(scratch[i][:rows])
                elif slot.kind == DEFERRED:
                    operands.append(block_buffers[i][(*outer, slice(start, start + rows))])
                else:
                    operands.append(constants[i])
            pending = 0
            for position, (reference, attrs, outputs, inputs) in enumerate(steps):
                while pending < len(reductions) and reductions[pending].position == position:
                    r = reductions[pending]
                    if log is not None:
                        log.current = r.instruction
                    partials[pending].append(partial_reduce(r.op, operands[r.source], r.acc))
                    pending += 1
                if log is not None:
                    log.current = program.steps[position].instruction
                if reference is None:
                    op = program.steps[position].op
                    accumulate(op, operands[outputs[0]], operands[inputs[0]], _reduced_in_tile(reduced, shape, outer, axis, start))
                    continue
                reference([operands[o] for o in outputs], [operands[i] for i in inputs], attrs)
            for r, bucket in zip(reductions[pending:], partials[pending:]):
                if log is not None:
                    log.current = r.instruction
                bucket.append(partial_reduce(r.op, operands[r.source], r.acc))
    if not reductions:
        if log is not None:
            log.current = None
        return None
    combined = []
    for r, bucket in zip(reductions, partials):
        if log is not None:
            log.current = r.instruction
        combined.append(combine(r.op, bucket))
    if log is not None:
        log.current = None
    return tuple(combined)


def scratch_arrays(program: KernelProgram, tile_shape: tuple[int, ...]) -> dict[int, np.ndarray]:
    """A tile-sized array for each temporary slot; temporaries whose lives do not overlap share
    one (a 20-update loop body fused into one program has 40 temporaries, 10 MiB of tiles that
    no cache holds, but needs two at a time).

    A temporary lives from the step that writes it to the last step or reduction that reads it;
    it may take the array of one whose last read came at an earlier step, so no step writes an
    array that one of its own inputs reads. A temporary written by more than one step, or read
    before it is written (an axis reduction's output accumulates across tiles), keeps its own."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    own: set[int] = set()
    for position, step in enumerate(program.steps):
        for slot in step.inputs:
            last[slot] = position
            if slot not in first:
                own.add(slot)
        for slot in step.outputs:
            if slot in first or step.axis_reduction:
                own.add(slot)
            first.setdefault(slot, position)
            last[slot] = max(last.get(slot, position), position)
    for reduction in program.reductions:
        last[reduction.source] = max(last.get(reduction.source, reduction.position), reduction.position)
    slots = program.slots
    temporaries = [i for i, slot in enumerate(slots) if slot.kind == TEMP]
    arrays: dict[int, np.ndarray] = {}
    free: dict[np.dtype, list[np.ndarray]] = {}
    in_use: list[tuple[int, np.ndarray]] = []  # (last read, array)
    for slot in sorted(temporaries, key=lambda i: first.get(i, -1)):
        dtype = slots[slot].dtype
        if slot in own or slot not in first:
            arrays[slot] = np.empty(tile_shape, dtype)
            continue
        start = first[slot]
        still = []
        for end, array in in_use:
            if end < start:
                free.setdefault(array.dtype, []).append(array)
            else:
                still.append((end, array))
        pool = free.get(dtype)
        array = pool.pop() if pool else np.empty(tile_shape, dtype)
        arrays[slot] = array
        in_use = [*still, (last[slot], array)]
    return arrays


def _implementation(program: KernelProgram, step: KernelStep) -> Callable[..., None] | None:
    """The step's reference, or an equivalent that allocates nothing per tile (None: an axis
    reduction, which ``accumulate`` runs)."""
    if step.axis_reduction:
        return None
    if step.op == "where" and step.loop_in is not None:
        out = step.outputs[0]
        common = step.loop_in[1]
        condition = program.slots[step.inputs[0]].dtype
        if out not in step.inputs and condition == np.bool_ and program.slots[out].dtype == common == step.loop_in[2]:
            return where_in_place
    return spec(step.op).reference


@dataclass(frozen=True, slots=True)
class TileAxes:
    """Where a tile lies along the reduced axes: ``axes`` of the tile (each with its first
    index and the axis' length in the view-block), and whether the fixed ones are first/last."""

    axes: tuple[tuple[int, int, int], ...]
    first: bool
    last: bool
    count: int


def _reduced_in_tile(reduced: list[int], shape: tuple[int, ...], outer: tuple[int, ...], axis: int, start: int) -> TileAxes:
    axes = []
    first = last = True
    for position in reduced:
        if position < axis:
            first &= outer[position] == 0
            last &= outer[position] == shape[position] - 1
        else:
            axes.append((position - axis, start if position == axis else 0, shape[position]))
    return TileAxes(tuple(axes), first, last, math.prod(shape[p] for p in reduced))


def accumulate(op: str, out: np.ndarray, values: np.ndarray, where: TileAxes) -> None:
    """Add a tile of an axis reduction's input into its output (strides 0 along the reduced
    axes), one index of the reduced axes at a time, as NumPy's reduction does."""
    entry = spec(op)
    ufunc = _combining(op)
    key: list[Any] = [slice(None)] * values.ndim
    for index in np.ndindex(*(values.shape[axis] for axis, _, _ in where.axes)):
        first, last = where.first, where.last
        for (axis, offset, length), i in zip(where.axes, index):
            key[axis] = i
            first &= offset + i == 0
            last &= offset + i == length - 1
        target, value = out[tuple(key)], values[tuple(key)]
        if first and entry.identity is None:
            np.copyto(target, value, casting="unsafe")
        else:
            ufunc(entry.identity if first else target, value, out=target, dtype=target.dtype, casting="unsafe")
        if last and op == "mean":
            np.true_divide(target, np.intp(where.count), out=target, casting="unsafe")


def where_in_place(outs: Sequence[np.ndarray], ins: Sequence[Any], attrs: Any) -> None:
    """``where`` without its temporary: legal when the output is no operand, the condition is
    boolean and the operands' common dtype is the output's (no selected value is cast twice)."""
    condition, x, y = (np.asarray(value) if type(value) is int else value for value in ins)  # -1 into uint8 wraps, as np.where's
    np.copyto(outs[0], y, casting="unsafe")
    np.copyto(outs[0], x, casting="unsafe", where=condition)


def _combining(op: str) -> np.ufunc:
    """Reduction ``op``'s combining ufunc (the opcode table's ``combine``)."""
    combine = spec(op).combine
    assert combine is not None, f"{op} is no reduction"
    return getattr(np, combine)


def partial_reduce(op: str, values: np.ndarray, acc: np.dtype) -> Any:
    """One tile's contribution to a full reduction, in the accumulator dtype."""
    if op in GroupOp.SELECTING:
        return _combining(op).reduce(values, axis=None)
    if op in GroupOp.LOGICAL and values.dtype.kind != "b":
        values = values != 0
    return _combining(op).reduce(values, axis=None, dtype=acc)


def combine(op: str, partials: Sequence[Any]) -> Any:
    """Fold partial results of the same reduction."""
    return _combining(op).reduce(np.asarray(partials))


def finalize(program: KernelProgram, which: int, partials: Sequence[Any], out: np.ndarray) -> None:
    """Write reduction ``which``'s result from its per-block partials into ``out``."""
    reduction = program.reductions[which]
    total = combine(reduction.op, partials)
    if reduction.op == "mean":
        total = total / program.elements
    np.copyto(out, np.asarray(total), casting="unsafe")

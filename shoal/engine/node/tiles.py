"""Running a kernel program with NumPy over cache-sized tiles of one view-block.

This is the path before a kernel is compiled, and always when Numba is absent. Each step runs
through its opcode's reference implementation, so values match the reference engine exactly;
temporaries are tile-sized scratch arrays reused for every tile of the block.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from shoal.bytecode import spec
from shoal.engine.node.program import ARRAY, CONST, TEMP, KernelProgram

TILE_ELEMENTS = 16384


def run_tiles(program: KernelProgram, index: int, buffer_of: Callable[[int], np.ndarray]) -> Any:
    """Run view-block ``index`` of ``program``; the block's partial reduction or None."""
    part = program.partition
    shape = part.block_shape(index)
    inner = int(np.prod(shape[1:], dtype=np.int64))
    tile_rows = max(1, TILE_ELEMENTS // max(inner, 1))
    slots = program.slots
    offsets = [part.block_offset(index, s.offset, s.strides) if s.kind == ARRAY else 0 for s in slots]
    block_strides = [s.strides[part.axis :] if s.kind != CONST else () for s in slots]
    buffers = [buffer_of(s.base) if s.kind == ARRAY else None for s in slots]
    scratch = {i: np.empty((min(tile_rows, shape[0]), *shape[1:]), s.dtype) for i, s in enumerate(slots) if s.kind == TEMP}
    references = [(spec(step.op).reference, step.instruction.attr_dict()) for step in program.steps]
    partials = []
    for start in range(0, shape[0], tile_rows):
        rows = min(tile_rows, shape[0] - start)
        tile_shape = (rows, *shape[1:])
        operands: list[Any] = []
        for i, slot in enumerate(slots):
            if slot.kind == ARRAY:
                strides = block_strides[i]
                operands.append(np.ndarray(tile_shape, slot.dtype, buffer=buffers[i], offset=offsets[i] + start * strides[0], strides=strides))
            elif slot.kind == TEMP:
                operands.append(scratch[i][:rows])
            else:
                operands.append(slot.value)
        for step, (reference, attrs) in zip(program.steps, references):
            reference([operands[o] for o in step.outputs], [operands[i] for i in step.inputs], attrs)
        if program.reduction is not None:
            reduction = program.reduction
            partials.append(partial_reduce(reduction.op, operands[reduction.source], reduction.acc))
    if program.reduction is None:
        return None
    return combine(program.reduction.op, partials)


def partial_reduce(op: str, values: np.ndarray, acc: np.dtype) -> Any:
    """One tile's contribution to a full reduction, in the accumulator dtype."""
    if op in ("sum", "mean"):
        return np.add.reduce(values, axis=None, dtype=acc)
    if op == "prod":
        return np.multiply.reduce(values, axis=None, dtype=acc)
    if op == "min":
        return np.minimum.reduce(values, axis=None)
    if op == "max":
        return np.maximum.reduce(values, axis=None)
    if op == "any":
        return np.any(values)
    return np.all(values)


def combine(op: str, partials: Sequence[Any]) -> Any:
    """Fold partial results of the same reduction."""
    values = np.asarray(partials)
    if op in ("sum", "mean"):
        return np.add.reduce(values)
    if op == "prod":
        return np.multiply.reduce(values)
    if op == "min":
        return np.minimum.reduce(values)
    if op == "max":
        return np.maximum.reduce(values)
    if op == "any":
        return bool(np.any(values))
    return bool(np.all(values))


def finalize(program: KernelProgram, partials: Sequence[Any], out: np.ndarray) -> None:
    """Write a full reduction's result from its per-block partials into ``out``."""
    reduction = program.reduction
    assert reduction is not None
    total = combine(reduction.op, partials)
    if reduction.op == "mean":
        total = total / program.elements
    np.copyto(out, np.asarray(total), casting="unsafe")

"""A fused group's view-block through NumPy's own inner loops over small tiles.

Until a group's kernel is compiled (and always without Numba) its view-blocks ran on the NumPy
tile path (``tiles.py``): one NumPy call per step and tile of 2^18 elements, whose temporaries
no core's L2 cache holds. Where every step of a program is an element-wise ufunc whose operands
already have its loop's dtypes, ``_tile_loops.c`` instead calls, without the interpreter lock,
the inner loop NumPy's ufunc has for exactly those dtypes, step after step on tiles of
:data:`TILE_ELEMENTS` elements. The loops are NumPy's, so the values are NumPy's. The
conditions each step's loops meet are read from the processor's status flags after each call,
as NumPy reads them around a ufunc's loop, and go to ``fp_flags``' log with the step's
instruction in NumPy's words, as the tile path's calls hand them over.

A same-dtype ``copy`` or ``fill`` step is a copy of items in C. An operand in another dtype
than its loop's is cast into a tile of its own before the step (an output, after it), and a
``copy`` between dtypes is one cast, where the cast is one of ``_tile_loops.c``'s: the C
conversion, as NumPy's cast loop, meeting no condition (into and out of bool, between
integers, integers into floats, float32 into float64). A program runs on the tile path
instead where a step needs another cast, is a reduction or neither ufunc nor copy, is an
integer power (its loop raises a Python error), writes a strided row through a loop NumPy 2.4
miscomputes there (``opcodes._through_contiguous``), where a written base is also read through
another mapping, or a constant does not convert to its loop's dtype silently.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from shoal.bytecode import GroupOp
from shoal.bytecode.opcodes import MISCOMPUTED_INTO_STRIDES, UFUNC_NAMES, ufunc_named
from shoal.engine.fp_signals import (
    CATEGORY_TEXT,
    DIVIDE,
    INVALID,
    OVER,
    UNDER,
    NumpyLog,
    numpy_name,
)
from shoal.engine.node.lower.program import (
    ARRAY,
    CONST,
    DEFERRED,
    TEMP,
    KernelProgram,
    KernelStep,
    Slot,
    block_offset,
)
from shoal.engine.node.run.tiles import scratch_arrays

try:
    from shoal.engine.node.run._tile_loops import cast_loop, copy_loop, loop_of, run_loops
except ImportError:  # built without a C compiler or NumPy's headers: the tile path runs
    cast_loop = copy_loop = loop_of = run_loops = None

TILE_ELEMENTS = 4096  # per step and tile: 32 KiB of float64 per operand (docs/decisions.md)
_NUMERIC = frozenset("biufc")
_VIEW, _TEMP, _CONSTANT = 0, 1, 2
_CAST_TILE = -1  # the slot of an operand that is a tile a cast fills


@dataclass(frozen=True, slots=True)
class LoopPlan:
    """The loops of one program: per step (loop, loop data, operand indices) and the program's
    step it computes or casts for; per operand its slot (``_CAST_TILE`` for a cast's tile) and,
    for a constant or a cast's tile, its dtype; per temporary the array it shares."""

    steps: tuple[tuple[int, int, tuple[int, ...]], ...]
    origins: tuple[int, ...]
    operands: tuple[tuple[int, np.dtype | None], ...]
    shared: Mapping[int, int]  # temporary slot -> the first slot of those sharing its array


def available() -> bool:
    """True if the loops were built with the package."""
    return run_loops is not None


def plan(program: KernelProgram) -> LoopPlan | None:
    """The loops that run ``program``, or None where it keeps to the tile path."""
    if run_loops is None or program.reductions or program.sweeps != 1 or program.stencil is not None:
        return None
    slots = program.slots
    if any(slot.rows is not None for slot in slots) or not _mappings_agree(slots):
        return None
    index_of: dict[tuple[int, str | None], int] = {}
    operands: list[tuple[int, np.dtype | None]] = []
    steps: list[tuple[int, int, tuple[int, ...]]] = []
    origins: list[int] = []

    def operand(slot_id: int, dtype: np.dtype | None) -> int:
        key = (slot_id, None if dtype is None else dtype.str)
        if key not in index_of:
            index_of[key] = len(operands)
            operands.append((slot_id, dtype))
        return index_of[key]

    def cast_tile(dtype: np.dtype) -> int:
        operands.append((_CAST_TILE, dtype))
        return len(operands) - 1

    for origin, step in enumerate(program.steps):
        if step.axis_reduction or step.loop_in is None or step.loop_out is None:
            return None
        loop = (*step.loop_in, *step.loop_out)
        if not all(_plain(dtype) for dtype in loop):
            return None
        cast_copy = _cast_copy(step, slots)
        if cast_copy is not None:
            steps.append((*cast_copy, (operand(step.inputs[0], None), operand(step.outputs[0], None))))
            origins.append(origin)
            continue
        found = _loop(step, loop, slots)
        if found is None:
            return None
        indices = []
        after = []
        for position, (slot_id, dtype) in enumerate(zip((*step.inputs, *step.outputs), loop)):
            slot = slots[slot_id]
            is_input = position < len(step.inputs)
            if slot.kind == CONST:
                if not is_input:
                    return None
                indices.append(operand(slot_id, dtype))
            elif slot.dtype == dtype:
                indices.append(operand(slot_id, None))
            else:
                cast = _cast(slot.dtype, dtype) if is_input else _cast(dtype, slot.dtype)
                if cast is None:
                    return None
                tile = cast_tile(dtype)
                if is_input:
                    steps.append((*cast, (operand(slot_id, None), tile)))
                    origins.append(origin)
                else:
                    after.append((*cast, (tile, operand(slot_id, None))))
                indices.append(tile)
        steps.append((found[0], found[1], tuple(indices)))
        steps.extend(after)
        origins.extend([origin] * (1 + len(after)))
    if not steps:
        return None
    arrays = scratch_arrays(program, (1,))
    first: dict[int, int] = {}
    shared = {slot: first.setdefault(id(array), slot) for slot, array in arrays.items()}
    return LoopPlan(tuple(steps), tuple(origins), tuple(operands), shared)


def _cast(source: np.dtype, target: np.dtype) -> tuple[int, int] | None:
    """The loop that casts ``source`` items into ``target`` as NumPy does, where it is one of
    those that meet no condition."""
    if not (_plain(source) and _plain(target)):
        return None
    return cast_loop(source.num, target.num)


def _plain(dtype: np.dtype) -> bool:
    """True if ``dtype`` is a number in this machine's byte order (what the loops read)."""
    return dtype.kind in _NUMERIC and dtype.isnative


def _cast_copy(step: KernelStep, slots: list[Slot]) -> tuple[int, int] | None:
    """The cast loop of a ``copy`` step from an array in another dtype than its output's, or None."""
    if step.op not in GroupOp.COPIES or len(step.inputs) != 1 or len(step.outputs) != 1:
        return None
    source, target = slots[step.inputs[0]], slots[step.outputs[0]]
    if source.kind == CONST or target.kind == CONST or source.dtype == target.dtype:
        return None
    return _cast(source.dtype, target.dtype)


def _loop(step: KernelStep, loop: tuple[np.dtype, ...], slots: list[Slot]) -> tuple[int, int] | None:
    """The inner loop (address, data) of ``step`` in exactly the ``loop`` dtypes, or None."""
    if step.op in GroupOp.COPIES and len(step.inputs) == 1 and len(step.outputs) == 1:
        return copy_loop(loop[0].itemsize) if loop[0] == loop[1] else None
    if step.op not in UFUNC_NAMES:
        return None
    ufunc = ufunc_named(step.op)
    if len(step.inputs) != ufunc.nin or len(step.outputs) != ufunc.nout or len(loop) != ufunc.nargs:
        return None
    if step.op in ("power", "float_power") and loop[0].kind in "biu":
        return None
    if step.op in MISCOMPUTED_INTO_STRIDES and not all(_contiguous_rows(slots[o]) for o in step.outputs):
        return None
    return loop_of(ufunc, tuple(dtype.num for dtype in loop))


def run(
    loops: LoopPlan,
    program: KernelProgram,
    index: int,
    buffer_of: Callable[[int], np.ndarray],
    block_buffers: Mapping[int, np.ndarray],
    constants: Mapping[int, Any],
) -> bool:
    """Run view-block ``index`` of ``program`` through ``loops``; False (nothing written) where
    a constant or an operand's alignment sends it to the tile path instead."""
    part = program.partition
    slots = program.slots
    temporaries: dict[int, np.ndarray] = {}
    operands = []
    for slot_id, loop_dtype in loops.operands:
        if slot_id == _CAST_TILE:
            assert loop_dtype is not None
            operands.append((_TEMP, np.empty(TILE_ELEMENTS, loop_dtype), 0, loop_dtype.itemsize, ()))
            continue
        slot = slots[slot_id]
        kind = slot.kind
        if kind == ARRAY:
            operands.append((_VIEW, buffer_of(slot.base), block_offset(part, index, slot), slot.dtype.itemsize, slot.strides[part.axis :]))
        elif kind == DEFERRED:
            buffer = block_buffers[slot_id]
            operands.append((_VIEW, buffer, 0, slot.dtype.itemsize, buffer.strides))
        elif kind == TEMP:
            owner = loops.shared[slot_id]
            array = temporaries.get(owner)
            if array is None:
                array = temporaries[owner] = np.empty(TILE_ELEMENTS, slot.dtype)
            operands.append((_TEMP, array, 0, slot.dtype.itemsize, ()))
        else:
            assert loop_dtype is not None
            value = _converted(constants[slot_id], loop_dtype)
            if value is None:
                return False
            operands.append((_CONSTANT, value, 0, loop_dtype.itemsize, ()))
    raised = run_loops(loops.steps, tuple(operands), part.block_shape(index), TILE_ELEMENTS)
    if raised == -1:
        return False
    if any(raised):
        _log(program, loops.origins, raised)
    return True


_MODES = ((DIVIDE, "divide"), (OVER, "over"), (UNDER, "under"), (INVALID, "invalid"))  # NumPy's order


def _log(program: KernelProgram, origins: tuple[int, ...], raised: tuple[int, ...]) -> None:
    """Hand each step's conditions to the log of ``fp_flags`` as NumPy's call would have
    (``origins``: the program's step of each loop)."""
    log = np.geterrcall()
    if type(log) is not NumpyLog:
        return  # nothing watched: the conditions are ignored
    modes = np.geterr()
    for origin, conditions in zip(origins, raised):
        step = program.steps[origin]
        for bit, mode in _MODES:
            if conditions & bit and modes[mode] == "log":
                log.messages.append(f"{CATEGORY_TEXT[bit]} encountered in {numpy_name(step.instruction)}")
                log.sources.append(step.instruction)


_CONVERTED: dict[tuple[type, str, str], np.ndarray] = {}


def _converted(value: Any, dtype: np.dtype) -> np.ndarray | None:
    """``value`` in ``dtype`` as the ufunc's unsafe cast gives it, or None where the conversion
    warns or fails (NumPy's own call then reports it)."""
    key = (type(value), repr(value), dtype.str)  # repr tells -0.0 from 0.0, which compare equal
    cached = _CONVERTED.get(key)
    if cached is not None:
        return cached
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with np.errstate(all="raise"):
                converted = np.array(value, dtype=dtype) if type(value) in (bool, int, float, complex) else np.asarray(value).astype(dtype)
    except (ArithmeticError, ValueError, TypeError, Warning):
        return None
    if converted.shape != ():
        return None
    if len(_CONVERTED) < 4096:
        _CONVERTED[key] = converted
    return converted


def _mappings_agree(slots: list[Slot]) -> bool:
    """True if every base that a slot writes is read and written through one mapping only."""
    mappings: dict[int, set[tuple[int, tuple[int, ...]]]] = {}
    written: set[int] = set()
    for slot in slots:
        if slot.kind == ARRAY:
            mappings.setdefault(slot.base, set()).add((slot.offset, slot.strides))
            if slot.written:
                written.add(slot.base)
    return all(len(mappings[base]) == 1 for base in written)


def _contiguous_rows(slot: Slot) -> bool:
    """True if ``slot``'s innermost axis steps one item (the tile path's temporaries do)."""
    return slot.kind == TEMP or (bool(slot.strides) and slot.strides[-1] == slot.dtype.itemsize)

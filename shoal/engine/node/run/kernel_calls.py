"""Calls of a shared-library kernel on one view-block, with the arguments flattened once.

``kernel_args`` builds a compiled kernel's arguments from its program on every call, and the
library kernel converts each to a C value: 40-60 µs of Python per view-block, holding the
interpreter lock that the other workers and the scheduling thread wait for. Across the calls of
one view-block (and replays of its plan) only the pointers change: a base's buffer, this
thread's block buffer or ring of rows, the buffer for held rows. :class:`PreparedCall` flattens
the rest once and fills in just the pointers, each distinct array once per call.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from shoal.engine.node.compile.native import NativeKernel
from shoal.engine.node.lower.program import ARRAY, CONST, DEFERRED, KernelProgram, block_offset


@dataclass(frozen=True, slots=True)
class _Base:
    """The 1-D typed buffer of a base."""

    base: int
    dtype: np.dtype


@dataclass(frozen=True, slots=True)
class _Buffer:
    """A deferred slot's block buffer (or ring of rows), flattened."""

    slot: int


@dataclass(frozen=True, slots=True)
class _Constant:
    """A constant slot's value, filled in on every call (a replayed plan's batch has its own)."""

    slot: int


@dataclass(frozen=True, slots=True)
class _Held:
    """The buffer a deferred slot's held rows are written to."""

    slot: int


class _BufferStandIn:
    """What ``kernel_args`` reads of a C-contiguous block buffer: its shape and strides."""

    def __init__(self, slot: int, shape: tuple[int, ...], itemsize: int) -> None:
        self.shape = shape
        self.strides = tuple(itemsize * math.prod(shape[axis + 1 :]) for axis in range(len(shape)))
        self._flat = _Buffer(slot)

    def reshape(self, *_shape: int) -> _Buffer:
        return self._flat


class PreparedCall:
    """``kernel``'s call on view-block ``index``; deferred slots' buffers have the given shapes
    and, where the kernel stores rows itself, hold the given (front, back) rows."""

    def __init__(
        self,
        kernel: NativeKernel,
        program: KernelProgram,
        index: int,
        buffer_shapes: dict[int, tuple[int, ...]],
        held_rows: dict[int, tuple[int, int]] | None = None,
    ) -> None:
        self.kernel = kernel
        buffers = {slot: _BufferStandIn(slot, shape, program.slots[slot].dtype.itemsize) for slot, shape in buffer_shapes.items()}
        held = None if held_rows is None else {slot: (_Held(slot), front, back) for slot, (front, back) in held_rows.items()}
        constants = {i: _Constant(i) for i, slot in enumerate(program.slots) if slot.kind == CONST}
        args = kernel_args(program, index, _Base, buffers, held, constants=constants)  # type: ignore[arg-type]
        self.flat, arrays = kernel.flatten([0 if isinstance(arg, _Constant) else arg for arg in args])
        offsets = kernel.flat_offsets()
        self.constants = [(position, offsets[position], arg.slot) for position, arg in enumerate(args) if isinstance(arg, _Constant)]
        self.sources: list[_Base | _Buffer | _Held] = []  # distinct arrays
        self.positions: list[tuple[int, int]] = []  # C argument -> index into ``sources``
        for array in arrays:
            source = args[array.position]
            if source not in self.sources:
                self.sources.append(source)
            self.positions.append((array.flat, self.sources.index(source)))

    def __call__(
        self,
        typed_of: Callable[[int, np.dtype], np.ndarray],
        buffers: dict[int, np.ndarray],
        held: dict[int, np.ndarray] | None = None,
        constants: dict[int, Any] | None = None,
    ) -> Any:
        """Run the kernel on bases from ``typed_of``, deferred slots' ``buffers`` (slot ->
        C-contiguous array of the prepared shape), ``held`` (slot -> held rows' buffer) and
        ``constants`` (slot -> the constant's value in the batch being run)."""
        pointers = []
        for source in self.sources:
            if isinstance(source, _Base):
                array = typed_of(source.base, source.dtype)
            elif isinstance(source, _Buffer):
                array = buffers[source.slot]
            else:
                assert held is not None
                array = held[source.slot]
            pointers.append((array.ctypes.data, array.size))
        flat = self.flat.copy()
        for position, start, slot in self.constants:
            assert constants is not None
            values = self.kernel.scalar(position, constants[slot])
            flat[start : start + len(values)] = values
        for position, which in self.positions:
            flat[position], flat[position + 1] = pointers[which]
        return self.kernel.call_flat(flat)


def kernel_args(
    program: KernelProgram,
    index: int,
    typed_of: Callable[[int, np.dtype], np.ndarray],
    block_buffers: dict[int, np.ndarray],
    held: dict[int, tuple[np.ndarray, int, int]] | None = None,
    *,
    constants: Mapping[int, Any],
) -> list[Any]:
    """The compiled kernel's arguments for view-block ``index``. Deferred slots write into
    ``block_buffers`` (slot -> a C-contiguous array: the view-block's shape, or a ring of rows
    when the kernel stores rows itself, then ``held`` gives slot -> (buffer for held rows, rows
    held at the front, rows held at the back)); ``constants`` gives each constant slot's value."""
    part = program.partition
    axis = part.axis
    args: list[Any] = list(part.block_shape(index))
    for position, slot in enumerate(program.slots):
        itemsize = slot.dtype.itemsize
        if slot.kind == DEFERRED:
            buffer = block_buffers[position]
            args += [buffer.reshape(-1), 0, *(s // itemsize for s in buffer.strides)]
            if program.stores_rows:
                assert held is not None
                rows, front, back = held[position]
                args += [buffer.shape[0], typed_of(slot.base, slot.dtype)]
                args.append(block_offset(part, index, slot) // itemsize)
                args += [*(s // itemsize for s in slot.strides[axis:]), rows, front, back]
        elif slot.kind == ARRAY:
            args.append(typed_of(slot.base, slot.dtype))
            args.append(block_offset(part, index, slot) // itemsize)
            args.extend(s // itemsize for s in slot.strides[axis:])
        elif slot.kind == CONST:
            args.append(constants[position])
    if program.stencil is not None:  # several sweeps per pass: where the view-block lies
        args += [part.starts[index], part.shape[axis]]
    return args

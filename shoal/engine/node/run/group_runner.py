"""Running one kernel program's view-blocks: the compiled kernel when it is ready, NumPy tiles
otherwise, storing deferred writes and holding the rows that neighbouring view-blocks still read.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np

from shoal.engine.node.compile.kernel_cache import KernelCache, kernel_key
from shoal.engine.node.compile.native import NativeKernel
from shoal.engine.node.lower.deferred import block_buffer, commit, store
from shoal.engine.node.lower.program import CONST, KernelProgram, block_offset
from shoal.engine.node.run import fp_flags, tile_loops
from shoal.engine.node.run.kernel_calls import PreparedCall, kernel_args
from shoal.engine.node.run.storage import Storage
from shoal.engine.node.run.tiles import TILE_ELEMENTS, run_tiles


class GroupRunner:
    """Runs view-blocks of one kernel program: compiled if ready, NumPy's loops or NumPy tiles otherwise."""

    def __init__(
        self,
        program: KernelProgram,
        storage: Storage,
        kernels: KernelCache | None,
        key: str | None = None,
        tile_elements: int = TILE_ELEMENTS,
        loops: tile_loops.LoopPlan | None = None,
    ) -> None:
        self.program = program
        self.tile_elements = tile_elements
        self.loops = loops  # NumPy's inner loops over small tiles (tile_loops.plan(program)), if it has them
        self.loop_blocks = 0
        self.storage = storage
        self.kernels = kernels
        self.key = "" if kernels is None else key or kernel_key(program.structure())
        self.compiled_blocks = 0
        self._held: dict[tuple[int, int], tuple[np.ndarray, np.ndarray]] = {}
        self._prepared: dict[int, PreparedCall] = {}  # view-block -> call of a library kernel
        self._constant_slots = [(i, slot) for i, slot in enumerate(program.slots) if slot.kind == CONST]

    def constants(self) -> dict[int, Any]:
        """The constant slots' values in the batch being run, in their slots' dtypes."""
        constant = self.storage.constant
        return {i: slot.dtype.type(constant(slot.const)) for i, slot in self._constant_slots}

    def run(self, index: int) -> Any:
        """Compute view-block ``index``; store its deferred writes, holding shared rows."""
        program = self.program
        shape = program.partition.block_shape(index)
        kernel = None if self.kernels is None else self.kernels.ready(self.key)
        if kernel is not None and program.stores_rows:
            return fp_flags.compute_storing(self, kernel, index, shape)
        if program.sweeps > 1:
            raise RuntimeError("a kernel running several sweeps per pass has no NumPy path; it is planned only once compiled")
        buffers = {slot: block_buffer(slot, program.slots[slot].dtype, shape) for slot in program.reaches}
        result = fp_flags.compute(self, kernel, index, buffers)
        for slot, computed in buffers.items():
            held = store(computed, self._target(slot, index), *self.held_rows(slot, index))
            if held is not None:
                self._held[(index, slot)] = held
        return result

    def _run_storing_rows(self, kernel: Any, index: int, shape: tuple[int, ...]) -> Any:
        """A compiled kernel that stores deferred rows itself through a ring of rows."""
        program = self.program
        inner = shape[1:]
        rows = {}
        held = {}
        for slot in program.reaches:
            dtype = program.slots[slot].dtype
            rows[slot] = block_buffer(slot, dtype, program.ring_shape(slot, inner))
            front, back = self.held_rows(slot, index)
            held[slot] = (np.empty(max(1, (front + back) * math.prod(inner)), dtype), front, back)
        self.compiled_blocks += 1
        if isinstance(kernel, NativeKernel):
            prepared = self._prepared.get(index)
            if prepared is None or prepared.kernel is not kernel:
                shapes = {slot: buffer.shape for slot, buffer in rows.items()}
                held_rows = {slot: (front, back) for slot, (_buffer, front, back) in held.items()}
                prepared = self._prepared[index] = PreparedCall(kernel, program, index, shapes, held_rows)
            result = prepared(self.storage.typed, rows, {slot: buffer for slot, (buffer, _f, _b) in held.items()}, self.constants())
        else:
            with np.errstate(all="ignore"):
                result = kernel(*kernel_args(program, index, self.storage.typed, rows, held, constants=self.constants()))
        for slot, (buffer, front, back) in held.items():
            if front or back:
                size = math.prod(inner)
                self._held[(index, slot)] = (
                    buffer[: front * size].reshape((front, *inner)),
                    buffer[front * size : (front + back) * size].reshape((back, *inner)),
                )
        return result

    def _compute(self, kernel: Any, index: int, buffers: dict[int, np.ndarray]) -> Any:
        """View-block ``index`` into its deferred ``buffers``: by ``kernel``, the compiled kernel
        :meth:`run` found ready (looked up once: one compiled meanwhile may store rows itself,
        which a call into ``buffers`` cannot do), else by NumPy tiles."""
        if self.kernels is None:
            return self._uncompiled(index, buffers)
        if isinstance(kernel, NativeKernel):
            self.compiled_blocks += 1
            prepared = self._prepared.get(index)
            if prepared is None or prepared.kernel is not kernel:
                shapes = {slot: buffer.shape for slot, buffer in buffers.items()}
                prepared = self._prepared[index] = PreparedCall(kernel, self.program, index, shapes)
            return prepared(self.storage.typed, buffers, constants=self.constants())
        if kernel is not None:
            self.compiled_blocks += 1
            return kernel(*kernel_args(self.program, index, self.storage.typed, buffers, constants=self.constants()))
        started = time.perf_counter()
        result = self._uncompiled(index, buffers)
        self.kernels.note_numpy_time(self.key, self.program, time.perf_counter() - started)
        return result

    def _uncompiled(self, index: int, buffers: dict[int, np.ndarray]) -> Any:
        """View-block ``index`` without a compiled kernel: NumPy's inner loops where the program
        has them (``tile_loops``), else a NumPy call per step and tile."""
        if self.loops is not None and tile_loops.run(self.loops, self.program, index, self.storage.raw, buffers, self._tile_constants()):
            self.loop_blocks += 1
            return None
        return run_tiles(self.program, index, self.storage.raw, buffers, self._tile_constants(), self.tile_elements)

    def _tile_constants(self) -> dict[int, Any]:
        """The constant slots' values in the batch being run, as the instructions hold them
        (the reference implementations see weak Python scalars as weak)."""
        constant = self.storage.constant
        return {i: constant(slot.const) for i, slot in self._constant_slots}

    def held_rows(self, slot: int, index: int) -> tuple[int, int]:
        """Rows of view-block ``index`` that deferred ``slot`` holds at its front and back."""
        part = self.program.partition
        return self.program.reaches[slot].held_rows(part.starts[index], part.stops[index], part.shape[0])

    def _target(self, slot: int, index: int) -> np.ndarray:
        s = self.program.slots[slot]
        part = self.program.partition
        offset = block_offset(part, index, s)
        return np.ndarray(part.block_shape(index), s.dtype, buffer=self.storage.raw(s.base), offset=offset, strides=s.strides)

    def commit(self, index: int) -> None:
        """Store the rows view-block ``index`` held, now that no other view-block reads them."""
        for slot in self.program.reaches:
            held = self._held.pop((index, slot), None)
            if held is not None:
                commit(held, self._target(slot, index))

"""Turning a plan into block operations in the dependency lists.

A fusion group becomes one block operation per view-block (compiled kernel when ready, NumPy
tiles otherwise) plus, for a reduction, an inline operation that folds the partials, and for a
deferred write, inline operations that commit the rows neighbouring view-blocks read. A
whole-view instruction becomes one block operation over every base-block it touches. A release
becomes an inline operation that writes every base-block of its base, so it runs after every
access and frees the memory at once.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from shoal.bytecode import Const, Instruction, Kind, View, spec
from shoal.engine.blocks.dependencies import BlockOp, DependencyLists
from shoal.engine.blocks.geometry import base_blocks, extent, view_extent
from shoal.engine.node.codegen import compilable
from shoal.engine.node.compiler import CompileMode, KernelCache, kernel_args, kernel_key
from shoal.engine.node.copy_chain import CopyChain
from shoal.engine.node.deferred import block_buffer, commit, store
from shoal.engine.node.gather_slabs import gather_slabs
from shoal.engine.node.kernel_calls import PreparedCall
from shoal.engine.node.native import NativeKernel
from shoal.engine.node.plan import Group, Plan, Release, WholeOp
from shoal.engine.node.program import ARRAY, CONST, DEFERRED, KernelProgram, block_offset, lower
from shoal.engine.node.storage import Storage
from shoal.engine.node.sweeps import (
    DEFAULT_SWEEPS_PER_PASS,
    fused,
    stencil_of,
    sweep_key,
    widened_reads,
)
from shoal.engine.node.tiles import finalize, run_tiles

MIN_VIEW_BLOCK_ELEMENTS = 16384  # below this a block operation costs more than it saves
PANEL_ROWS_MIN = 64


@dataclass
class BuildCounts:
    """What a batch was turned into: fields of ``BatchStats`` (``NodeEngine.last_stats``)."""

    kernels: int = 0  # fusion groups
    fused_instructions: int = 0
    compilable_kernels: int = 0
    whole_ops: int = 0
    product_panels: int = 0
    axis_panels: int = 0
    copy_chains: int = 0
    releases: int = 0
    deferred_writes: int = 0
    sweep_passes: int = 0


class GroupRunner:
    """Runs view-blocks of one kernel program: compiled if ready, NumPy tiles otherwise."""

    def __init__(self, program: KernelProgram, storage: Storage, kernels: KernelCache | None) -> None:
        self.program = program
        self.storage = storage
        self.kernels = kernels
        self.key = kernel_key(program.structure()) if kernels is not None else ""
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
            return self._run_storing_rows(kernel, index, shape)
        if program.sweeps > 1:
            raise RuntimeError("a kernel running several sweeps per pass has no NumPy path; it is planned only once compiled")
        buffers = {slot: block_buffer(slot, program.slots[slot].dtype, shape) for slot in program.reaches}
        with np.errstate(all="ignore"):
            result = self._compute(index, buffers)
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

    def _compute(self, index: int, buffers: dict[int, np.ndarray]) -> Any:
        if self.kernels is None:
            return run_tiles(self.program, index, self.storage.raw, buffers, self._tile_constants())
        kernel = self.kernels.ready(self.key)
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
        result = run_tiles(self.program, index, self.storage.raw, buffers, self._tile_constants())
        self.kernels.note_numpy_time(self.key, self.program, time.perf_counter() - started)
        return result

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


class Builder:
    """Adds the block operations of plan steps to the dependency lists, in program order."""

    def __init__(
        self,
        storage: Storage,
        kernels: KernelCache,
        block_elements: int,
        threads: int = 1,
        direct_work: int = 0,
        sweeps_per_pass: int = DEFAULT_SWEEPS_PER_PASS,
    ) -> None:
        self.storage = storage
        self.sweeps_per_pass = sweeps_per_pass
        self.direct_work = direct_work  # a lone instruction under 1/64 of this runs whole
        self.kernels = kernels
        self.block_elements = block_elements
        self.threads = threads
        self.deps = DependencyLists()
        self.counts = BuildCounts()
        self.runners: list[GroupRunner] = []
        self.awaiting: list[str] = []  # kernels of sweep passes built one sweep per pass as not compiled
        self._seq = 0

    def steps(self, plan: Plan) -> Iterator[list[BlockOp]]:
        """Build ``plan`` step by step, yielding each step's new block operations, so that a
        pool can run the first ones while later ones are built."""
        position = 0
        while position < len(plan.steps):
            step = plan.steps[position]
            built = len(self.deps.ops)
            position += 1
            if isinstance(step, Group):
                position = self._sweeps(plan, position - 1)
            elif isinstance(step, WholeOp):
                self._whole(step.instruction)
            elif isinstance(step, CopyChain):
                self._chain(step)
            elif isinstance(step, Release):
                self._release(step.base, plan.temporaries)
            yield self.deps.ops[built:]

    def _sweeps(self, plan: Plan, position: int) -> int:
        """Build the group at ``position``, fused with the identical in-place sweeps that follow
        it (``shoal.engine.node.sweeps``) once their kernel is compiled; the next position."""
        steps, temporaries = plan.steps, plan.temporaries
        group = steps[position]
        assert isinstance(group, Group)
        if self.sweeps_per_pass < 2 or self.kernels.mode is CompileMode.OFF or self._runs_whole(group):
            self._group(group, temporaries)
            return position + 1
        program = self._lower(group, temporaries)
        stencil = stencil_of(program)
        if stencil is None or not compilable(program):
            self._group(group, temporaries, program)
            return position + 1
        key = sweep_key(program)
        run = [(group, program)]
        end = scan = position + 1
        while scan < len(steps) and len(run) < self.sweeps_per_pass:
            step = steps[scan]
            if isinstance(step, Release) and step.base in temporaries:
                scan += 1
                continue
            if not isinstance(step, Group) or self._runs_whole(step):
                break
            following = self._lower(step, temporaries)
            if sweep_key(following) != key:
                break
            run.append((step, following))
            end = scan = scan + 1
        if len(run) == 1:
            self._group(group, temporaries, program)
            return position + 1
        passes = fused(program, stencil, len(run))
        if self.kernels.lookup(passes) is None:  # not compiled yet: these sweeps one per pass
            self.awaiting.append(kernel_key(passes.structure()))
            programs = {id(step): lowered for step, lowered in run}
            for step in steps[position:end]:
                if isinstance(step, Release):
                    self._release(step.base, temporaries)
                else:
                    self._group(step, temporaries, programs[id(step)])
            return end
        self._group(Group(group.shape, [i for g, _p in run for i in g.instructions]), temporaries, passes)
        self.counts.sweep_passes += 1
        for step in steps[position:end]:
            if isinstance(step, Release):
                self._release(step.base, temporaries)
        return end

    def _runs_whole(self, group: Group) -> bool:
        """True if ``group`` is cheaper run as one whole-view operation (one small instruction)."""
        return len(group.instructions) == 1 and math.prod(group.shape) < self.direct_work // 64 and not group.reads_rows

    def _lower(self, group: Group, temporaries: set[int]) -> KernelProgram:
        return lower(group, temporaries, self._view_block_elements(math.prod(group.shape)))

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    def _block_bytes(self, base: int) -> int:
        return self.block_elements * self.storage.decl(base).dtype.itemsize

    def _view_block_elements(self, elements: int) -> int:
        """The block size, made smaller where that gives every thread two view-blocks."""
        if self.threads <= 1:
            return self.block_elements
        wanted = -(-elements // (2 * self.threads))
        return min(self.block_elements, max(MIN_VIEW_BLOCK_ELEMENTS, wanted))

    def _view_blocks(self, view: View) -> list[tuple[int, int]]:
        low, high = view_extent(view)
        return [(view.base, k) for k in base_blocks(low, high, self._block_bytes(view.base))]

    def _group(self, group: Group, temporaries: set[int], program: KernelProgram | None = None) -> None:
        """Add ``group``'s block operations (``program``: the group lowered, if it already is)."""
        if program is None and self._runs_whole(group):
            self._whole(group.instructions[0])  # cheaper to plan; one block anyway
            return
        if program is None:
            program = self._lower(group, temporaries)
        self.counts.kernels += 1
        self.counts.fused_instructions += len(group.instructions)
        kernels = None
        if compilable(program):
            self.counts.compilable_kernels += 1
            if self.kernels.mode is not CompileMode.OFF:
                self.kernels.lookup(program)  # starts (or, in sync mode, finishes) compilation
                kernels = self.kernels
        runner = GroupRunner(program, self.storage, kernels)
        self.runners.append(runner)
        part = program.partition
        arrays = [slot for slot in program.slots if slot.kind in (ARRAY, DEFERRED)]
        bases = tuple({slot.base for slot in arrays})
        written = tuple({slot.base for slot in arrays if slot.written})
        access_lists = [self._slot_blocks(program, slot) for slot in arrays]
        ops = []
        for index in range(len(part)):
            reads: list[tuple[int, int]] = []
            writes: list[tuple[int, int]] = []
            for slot, blocks in zip(arrays, access_lists):
                (writes if slot.written else reads).extend(blocks[index])
            if program.stencil is not None:  # the halo rows its earlier sweeps recompute
                reads.extend(widened_reads(program, index, self._block_bytes(program.slots[program.stencil.target].base)))
            ops.append(BlockOp(self._next(), partial(runner.run, index), tuple(reads), tuple(writes), bases, written, label=f"kernel {self.counts.kernels}.{index}"))
        self.deps.insert_group(ops)
        for which, reduction in enumerate(program.reductions):
            output = reduction.output
            fold = partial(self._fold, program, which, ops, output)
            op = BlockOp(self._next(), fold, (), tuple(self._view_blocks(output)), (output.base,), (output.base,), inline=True, label="fold")
            self.deps.insert_group([op], after=ops)
        if program.reaches:
            self.counts.deferred_writes += len(program.reaches)
            self.deps.insert_group(self._commits(runner))

    def _commits(self, runner: GroupRunner) -> list[BlockOp]:
        """One inline operation per view-block that holds rows, writing those rows' base-blocks."""
        program = runner.program
        part = program.partition
        commits = []
        for index in range(len(part)):
            writes: list[tuple[int, int]] = []
            for slot_id in program.reaches:
                slot = program.slots[slot_id]
                front, back = runner.held_rows(slot_id, index)
                rows = part.stops[index] - part.starts[index]
                for first, count in ((0, front), (rows - back, back)):
                    if count:
                        offset = block_offset(part, index, slot) + first * slot.strides[0]
                        low, high = extent(offset, (count, *part.shape[1:]), slot.strides, slot.dtype.itemsize)
                        writes += [(slot.base, k) for k in base_blocks(low, high, self._block_bytes(slot.base))]
            if writes:
                bases = tuple({key[0] for key in writes})
                commits.append(BlockOp(self._next(), partial(runner.commit, index), (), tuple(writes), bases, bases, inline=True, label="commit"))
        return commits

    def _fold(self, program: KernelProgram, which: int, ops: list[BlockOp], output: View) -> None:
        with np.errstate(all="ignore"):
            finalize(program, which, [op.result[which] for op in ops], self.storage.array(output))

    def _slot_blocks(self, program: KernelProgram, slot) -> list[list[tuple[int, int]]]:
        """Base-blocks that each view-block of ``slot`` touches (vectorised over blocks)."""
        part = program.partition
        count = len(part)
        if count == 0:
            return []
        block_bytes = self._block_bytes(slot.base)
        if count <= 16 or slot.rows is not None:
            inner = slot.strides[part.axis :]
            itemsize = slot.dtype.itemsize
            result = []
            for index in range(count):
                offset = block_offset(part, index, slot)
                low, high = extent(offset, part.block_shape(index), inner, itemsize)
                result.append([(slot.base, k) for k in base_blocks(low, high, block_bytes)])
            return result
        axis = part.axis
        strides = np.array(slot.strides, dtype=np.int64)
        starts = np.array(part.starts, dtype=np.int64)
        rows = np.array(part.stops, dtype=np.int64) - starts
        offsets = slot.offset + starts * strides[axis]
        if axis:
            offsets = offsets + np.array(part.outer, dtype=np.int64).reshape(count, axis) @ strides[:axis]
        inner_low = inner_high = 0
        for n, stride in zip(part.shape[axis + 1 :], slot.strides[axis + 1 :]):
            if stride < 0:
                inner_low += (n - 1) * stride
            else:
                inner_high += (n - 1) * stride
        span = (rows - 1) * strides[axis]
        lows = offsets + inner_low + np.minimum(span, 0)
        highs = offsets + inner_high + np.maximum(span, 0) + slot.dtype.itemsize
        firsts = (lows // block_bytes).tolist()
        lasts = ((highs - 1) // block_bytes).tolist()
        base = slot.base
        return [[(base, k) for k in range(first, last + 1)] for first, last in zip(firsts, lasts)]

    def _whole(self, instruction: Instruction) -> None:
        if self._row_panels(instruction) or self._axis_panels(instruction) or gather_slabs(self, instruction):
            return
        self.counts.whole_ops += 1
        reads = [key for view in instruction.inputs if isinstance(view, View) for key in self._view_blocks(view)]
        writes = [key for view in instruction.outputs for key in self._view_blocks(view)]
        bases = tuple({view.base for view in (*instruction.inputs, *instruction.outputs) if isinstance(view, View)})
        written = tuple({view.base for view in instruction.outputs})
        run = partial(self._run_whole, instruction)
        self.deps.insert(BlockOp(self._next(), run, tuple(reads), tuple(writes), bases, written, label=instruction.op))

    def _chain(self, chain: CopyChain) -> None:
        """The chain's copies in order, as one block operation (see ``copy_chain``)."""
        self.counts.copy_chains += 1
        views = [(view, False) for i in chain.instructions for view in i.inputs if isinstance(view, View)]
        views += [(view, True) for i in chain.instructions for view in i.outputs]
        reads = {key for view, write in views if not write for key in self._view_blocks(view)}
        writes = {key for view, write in views if write for key in self._view_blocks(view)}
        bases = tuple({view.base for view, _ in views})
        written = tuple({view.base for view, write in views if write})

        def run() -> None:
            for instruction in chain.instructions:
                self._run_whole(instruction)

        self.deps.insert(BlockOp(self._next(), run, tuple(reads - writes), tuple(writes), bases, written, label="copy chain"))

    def _row_panels(self, instruction: Instruction) -> bool:
        """A 2-D product as row panels on the pool, each a one-thread BLAS call.

        Measured faster than one call to threaded BLAS (2048², 2 cores: 0.31-0.34 s against
        0.35-0.45 s); products that do not fit the pattern run whole.
        """
        if instruction.op not in ("matmul", "dot") or self.threads <= 1:
            return False
        out = instruction.outputs[0]
        a, b = instruction.inputs
        if not (isinstance(a, View) and isinstance(b, View)) or a.ndim != 2 or b.ndim != 2 or out.ndim != 2:
            return False
        if out.base in (a.base, b.base) or a.shape[0] < 2 * PANEL_ROWS_MIN:
            return False
        rows = max(PANEL_ROWS_MIN, -(-a.shape[0] // (4 * self.threads)))
        b_blocks = tuple(self._view_blocks(b))
        ops = []
        for start in range(0, a.shape[0], rows):
            stop = min(start + rows, a.shape[0])
            a_panel = View(a.base, a.dtype, a.offset + start * a.strides[0], (stop - start, a.shape[1]), a.strides)
            out_panel = View(out.base, out.dtype, out.offset + start * out.strides[0], (stop - start, out.shape[1]), out.strides)
            run = partial(self._run_panel, a_panel, b, out_panel)
            reads = tuple(self._view_blocks(a_panel)) + b_blocks
            ops.append(BlockOp(self._next(), run, reads, tuple(self._view_blocks(out_panel)), (a.base, b.base, out.base), (out.base,), label="panel"))
        self.deps.insert_group(ops)
        self.counts.product_panels += len(ops)
        return True

    def _axis_panels(self, instruction: Instruction) -> bool:
        """A reduction or scan along some axes, split along the first axis it keeps.

        Each panel runs the opcode's reference implementation on a slab of the input and the
        matching slab of the output, so ``np.sum(f, axis=0)`` over a (9, ny, nx) array runs as
        row slabs of ``ny`` on every thread.
        """
        kind = spec(instruction.op).kind
        if kind not in (Kind.REDUCTION, Kind.SCAN) or self.threads <= 1 or len(instruction.inputs) != 1:
            return False
        source, out = instruction.inputs[0], instruction.outputs[0]
        axis = instruction.attr("axis")
        if not isinstance(source, View) or axis is None or source.ndim < 2 or out.base == source.base:
            return False
        reduced = {a % source.ndim for a in (axis if isinstance(axis, tuple) else (axis,))}
        kept = [a for a in range(source.ndim) if a not in reduced]
        if not kept:
            return False
        split = kept[0]
        if kind is Kind.SCAN or instruction.attr("keepdims", False):
            out_axis = split
        else:
            out_axis = 0
        rows = source.shape[split]
        per_row = math.prod(source.shape) // max(rows, 1)
        smallest = min(self.block_elements, MIN_VIEW_BLOCK_ELEMENTS)
        panel = max(1, -(-rows // (4 * self.threads)), -(-smallest // max(per_row, 1)))
        if panel >= rows:
            return False
        ops = []
        for start in range(0, rows, panel):
            stop = min(start + panel, rows)
            piece = _slab(source, split, start, stop)
            target = _slab(out, out_axis, start, stop)
            run = partial(self._run_whole, Instruction(instruction.op, (target,), (piece,), instruction.attrs))
            reads, writes = tuple(self._view_blocks(piece)), tuple(self._view_blocks(target))
            ops.append(BlockOp(self._next(), run, reads, writes, (source.base, out.base), (out.base,), label="slab"))
        self.deps.insert_group(ops)
        self.counts.axis_panels += len(ops)
        return True

    def _run_panel(self, a: View, b: View, out: View) -> None:
        left, right, target = self.storage.array(a), self.storage.array(b), self.storage.array(out)
        with np.errstate(all="ignore"):
            if target.dtype == np.result_type(left, right):
                np.matmul(left, right, out=target)
            else:
                np.copyto(target, np.matmul(left, right), casting="unsafe")

    def _run_whole(self, instruction: Instruction) -> None:
        storage = self.storage
        outs = [storage.array(view) for view in instruction.outputs]
        ins = [storage.constant(operand) if isinstance(operand, Const) else storage.array(operand) for operand in instruction.inputs]
        with np.errstate(all="ignore"):
            spec(instruction.op).reference(outs, ins, instruction.attr_dict())

    def _release(self, base: int, temporaries: set[int]) -> None:
        self.counts.releases += 1
        if base in temporaries or base not in self.storage.decls:
            self.storage.decls.pop(base, None)
            return
        decl = self.storage.decl(base)
        blocks = base_blocks(0, max(decl.nbytes, 1), self._block_bytes(base))
        writes = tuple((base, k) for k in blocks)
        self.deps.insert(BlockOp(self._next(), partial(self.storage.release, base), (), writes, inline=True, frees=base, label="release"))


def _slab(view: View, axis: int, start: int, stop: int) -> View:
    """``view`` restricted to ``start:stop`` along ``axis``."""
    shape = (*view.shape[:axis], stop - start, *view.shape[axis + 1 :])
    return View(view.base, view.dtype, view.offset + start * view.strides[axis], shape, view.strides)

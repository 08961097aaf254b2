"""Turning a plan into block operations in the dependency lists.

A fusion group becomes one block operation per view-block (run by a ``GroupRunner``: compiled
kernel when ready, NumPy tiles otherwise) plus, for a reduction, an inline operation that folds
the partials, and for a deferred write, inline operations that commit the rows neighbouring
view-blocks read. A whole-view instruction becomes one block operation over every base-block it
touches, or panels (``panels``, ``gather_slabs``). A release becomes an inline operation that
writes every base-block of its base, so it runs after every access and frees the memory at once.
The builders share a ``BuildContext`` (dependency lists, counts, base-block sizes) and nothing
else.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import replace
from functools import partial

import numpy as np

from shoal.bytecode import Instruction, View
from shoal.engine import fp_signals
from shoal.engine.blocks.dependencies import BlockOp
from shoal.engine.blocks.geometry import base_blocks, extent
from shoal.engine.node.codegen.kernel_source import compilable
from shoal.engine.node.compile.kernel_cache import CompileMode, KernelCache, kernel_key
from shoal.engine.node.lower.program import ARRAY, DEFERRED, KernelProgram, block_offset
from shoal.engine.node.lower.sweeps import (
    DEFAULT_SWEEPS_PER_PASS,
    chain_shrink,
    fused,
    shrunk_by,
    stencil_of,
    sweep_key,
    widened_reads,
)
from shoal.engine.node.plan.copy_chain import CopyChain
from shoal.engine.node.plan.plan import Group, Plan, Release, WholeOp
from shoal.engine.node.run import tile_loops
from shoal.engine.node.run.group_runner import GroupRunner
from shoal.engine.node.run.storage import Storage
from shoal.engine.node.run.tiles import TILE_ELEMENTS as DEFAULT_TILE_ELEMENTS
from shoal.engine.node.run.tiles import finalize
from shoal.engine.node.run.whole import run_whole
from shoal.engine.node.schedule.context import BLOCK_ITEMSIZE, MIN_VIEW_BLOCK_ELEMENTS, BuildContext
from shoal.engine.node.schedule.gather_slabs import gather_slabs
from shoal.engine.node.schedule.lowering_memo import LoweringMemo
from shoal.engine.node.schedule.panels import axis_panels, row_panels


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
        positions: Mapping[int, int] | None = None,
        tile_elements: int = DEFAULT_TILE_ELEMENTS,
        tile_loops: bool = False,
    ) -> None:
        self.storage = storage
        self.sweeps_per_pass = sweeps_per_pass
        self.direct_work = direct_work  # a lone instruction under 1/64 of this runs whole
        self.kernels = kernels
        self.block_elements = block_elements
        self.tile_elements = tile_elements  # elements per NumPy call on the tile path
        self.tile_loops = tile_loops  # NumPy's inner loops over small tiles where a group has them
        self.threads = threads
        self.context = BuildContext(storage, block_elements, threads, positions)
        self.deps = self.context.deps
        self.counts = self.context.counts
        self.runners: list[GroupRunner] = []
        self.awaiting: list[str] = []  # kernels of sweep passes built one sweep per pass as not compiled
        self.lowered = LoweringMemo(lambda base: storage.decls[base].dtype.itemsize)

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
        it (``shoal.engine.node.lower.sweeps``) once their kernel is compiled; the next position."""
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
        shrink: tuple[int, int] | None = None  # rows each sweep writes fewer at the top and bottom
        end = scan = position + 1
        while scan < len(steps) and len(run) < self.sweeps_per_pass:
            step = steps[scan]
            if isinstance(step, Release) and step.base in temporaries:
                scan += 1
                continue
            if not isinstance(step, Group) or self._runs_whole(step):
                break
            following = self._lower(step, temporaries)
            if shrink in (None, (0, 0)) and sweep_key(following) == key:
                shrink = (0, 0)
            else:
                continued = chain_shrink(stencil, shrunk_by(program, stencil, following), shrink, len(run))
                if continued is None:
                    break
                shrink = continued
            run.append((step, following))
            end = scan = scan + 1
        if len(run) == 1:
            self._group(group, temporaries, program)
            return position + 1
        if shrink is not None:
            stencil = replace(stencil, top=shrink[0], bottom=shrink[1])
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
        return self.lowered.lower(group, temporaries, self._view_block_elements(math.prod(group.shape), _narrowing(group)))

    def _view_block_elements(self, elements: int, narrowing: int = 1) -> int:
        """The block size times ``narrowing``, made smaller where that gives every thread two
        view-blocks."""
        block = self.block_elements * narrowing
        if self.threads <= 1:
            return block
        wanted = -(-elements // (2 * self.threads))
        return min(block, max(MIN_VIEW_BLOCK_ELEMENTS, wanted))

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
        key = None
        if self.lowered.shared(program, "compilable", partial(compilable, program)):
            self.counts.compilable_kernels += 1
            if self.kernels.mode is not CompileMode.OFF:
                key = self.lowered.shared(program, "key", lambda: kernel_key(program.structure()))
                self.kernels.lookup(program, key)  # starts (or, in sync mode, finishes) compilation
                kernels = self.kernels
        loops = self.lowered.shared(program, "loops", partial(tile_loops.plan, program)) if self.tile_loops else None
        runner = GroupRunner(program, self.storage, kernels, key, self.tile_elements * _narrowing(group), loops)
        self.runners.append(runner)
        part = program.partition
        arrays = [slot for slot in program.slots if slot.kind in (ARRAY, DEFERRED)]
        bases = tuple({slot.base for slot in arrays})
        written = tuple({slot.base for slot in arrays if slot.written})
        access_lists = self.lowered.base_blocks(program, lambda: [self._slot_blocks(program, slot) for slot in arrays])
        origin = self.context.origin(group.instructions)
        ops = []
        for index in range(len(part)):
            reads: list[tuple[int, int]] = []
            writes: list[tuple[int, int]] = []
            for slot, blocks in zip(arrays, access_lists):
                (writes if slot.written else reads).extend(blocks[index])
            if program.stencil is not None:  # the halo rows its earlier sweeps recompute
                reads.extend(widened_reads(program, index, self.context.block_bytes(program.slots[program.stencil.target].base)))
            ops.append(BlockOp(self.context.next_seq(), partial(runner.run, index), tuple(reads), tuple(writes), bases, written, label=f"kernel {self.counts.kernels}.{index}", origin=origin))
        self.deps.insert_group(ops)
        for which, reduction in enumerate(program.reductions):
            output = reduction.output
            fold = partial(self._fold, program, which, ops, output)
            op = BlockOp(self.context.next_seq(), fold, (), tuple(self.context.view_blocks(output)), (output.base,), (output.base,), inline=True, label="fold", origin=origin)
            self.deps.insert_group([op], after=ops)
        if program.reaches:
            self.counts.deferred_writes += len(program.reaches)
            self.deps.insert_group(self._commits(runner, origin))

    def _commits(self, runner: GroupRunner, origin: tuple[int, ...]) -> list[BlockOp]:
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
                        writes += [(slot.base, k) for k in base_blocks(low, high, self.context.block_bytes(slot.base))]
            if writes:
                bases = tuple({key[0] for key in writes})
                commits.append(BlockOp(self.context.next_seq(), partial(runner.commit, index), (), tuple(writes), bases, bases, inline=True, label="commit", origin=origin))
        return commits

    def _fold(self, program: KernelProgram, which: int, ops: list[BlockOp], output: View) -> None:
        with fp_signals.noting(program.reductions[which].instruction):
            finalize(program, which, [op.result[which] for op in ops], self.storage.array(output))

    def _slot_blocks(self, program: KernelProgram, slot) -> list[list[tuple[int, int]]]:
        """Base-blocks that each view-block of ``slot`` touches (vectorised over blocks)."""
        part = program.partition
        count = len(part)
        if count == 0:
            return []
        block_bytes = self.context.block_bytes(slot.base)
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
        if row_panels(self.context, instruction) or axis_panels(self.context, instruction) or gather_slabs(self.context, instruction):
            return
        self.counts.whole_ops += 1
        reads = [key for view in instruction.inputs if isinstance(view, View) for key in self.context.view_blocks(view)]
        writes = [key for view in instruction.outputs for key in self.context.view_blocks(view)]
        bases = tuple({view.base for view in (*instruction.inputs, *instruction.outputs) if isinstance(view, View)})
        written = tuple({view.base for view in instruction.outputs})
        run = partial(run_whole, self.storage, instruction)
        self.deps.insert(BlockOp(self.context.next_seq(), run, tuple(reads), tuple(writes), bases, written, label=instruction.op, origin=self.context.origin((instruction,))))

    def _chain(self, chain: CopyChain) -> None:
        """The chain's copies in order, as one block operation (see ``copy_chain``)."""
        self.counts.copy_chains += 1
        views = [(view, False) for i in chain.instructions for view in i.inputs if isinstance(view, View)]
        views += [(view, True) for i in chain.instructions for view in i.outputs]
        reads = {key for view, write in views if not write for key in self.context.view_blocks(view)}
        writes = {key for view, write in views if write for key in self.context.view_blocks(view)}
        bases = tuple({view.base for view, _ in views})
        written = tuple({view.base for view, write in views if write})

        def run() -> None:
            for instruction in chain.instructions:
                run_whole(self.storage, instruction)

        self.deps.insert(BlockOp(self.context.next_seq(), run, tuple(reads - writes), tuple(writes), bases, written, label="copy chain", origin=self.context.origin(chain.instructions)))

    def _release(self, base: int, temporaries: set[int]) -> None:
        self.counts.releases += 1
        if base in temporaries or base not in self.storage.decls:
            self.storage.decls.pop(base, None)
            return
        decl = self.storage.decl(base)
        blocks = base_blocks(0, max(decl.nbytes, 1), self.context.block_bytes(base))
        writes = tuple((base, k) for k in blocks)
        self.deps.insert(BlockOp(self.context.next_seq(), partial(self.storage.release, base), (), writes, inline=True, frees=base, label="release"))


def _narrowing(group: Group) -> int:
    """How many times the block and tile sizes (counted in 8-byte elements) ``group``'s elements
    get, so that its blocks and tiles hold as many bytes: 8 // its widest item size, at least 1."""
    widest = 1
    for instruction in group.instructions:
        for view in (*instruction.outputs, *instruction.inputs):
            if isinstance(view, View):
                widest = max(widest, view.dtype.itemsize)
    return max(1, BLOCK_ITEMSIZE // widest)

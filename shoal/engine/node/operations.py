"""Turning a plan into block operations in the dependency lists.

A fusion group becomes one block operation per view-block (compiled kernel when ready, NumPy
tiles otherwise) plus, for a reduction, an inline operation that folds the partials. A
whole-view instruction becomes one block operation over every base-block it touches. A release
becomes an inline operation that writes every base-block of its base, so it runs after every
access and frees the memory at once.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from shoal.bytecode import Const, Instruction, Kind, View, spec
from shoal.engine.node.blocks import base_blocks
from shoal.engine.node.codegen import compilable
from shoal.engine.node.compiler import CompileMode, KernelCache, kernel_args, kernel_key
from shoal.engine.node.deps import BlockOp, DependencyLists
from shoal.engine.node.plan import Group, Plan, Release, WholeOp
from shoal.engine.node.program import ARRAY, KernelProgram, lower
from shoal.engine.node.storage import Storage
from shoal.engine.node.tiles import finalize, run_tiles


@dataclass
class BuildCounts:
    """What a batch was turned into (for ``NodeEngine.last_stats``)."""

    groups: int = 0
    fused_instructions: int = 0
    compilable_groups: int = 0
    whole_ops: int = 0
    releases: int = 0


class GroupRunner:
    """Runs view-blocks of one kernel program: compiled if ready, NumPy tiles otherwise."""

    def __init__(self, program: KernelProgram, storage: Storage, kernels: KernelCache | None) -> None:
        self.program = program
        self.storage = storage
        self.kernels = kernels
        self.key = kernel_key(program.structure()) if kernels is not None else ""
        self.compiled_blocks = 0

    def run(self, index: int) -> Any:
        with np.errstate(all="ignore"):
            kernel = self.kernels.ready(self.key) if self.kernels is not None else None
            if kernel is not None:
                self.compiled_blocks += 1
                return kernel(*kernel_args(self.program, index, self.storage.typed))
            return run_tiles(self.program, index, self.storage.raw)


class Builder:
    """Adds the block operations of plan steps to the dependency lists, in program order."""

    def __init__(self, storage: Storage, kernels: KernelCache, block_elements: int) -> None:
        self.storage = storage
        self.kernels = kernels
        self.block_elements = block_elements
        self.deps = DependencyLists()
        self.counts = BuildCounts()
        self.runners: list[GroupRunner] = []
        self._seq = 0

    def build(self, plan: Plan) -> list[BlockOp]:
        for step in plan.steps:
            if isinstance(step, Group):
                self._group(step, plan.temporaries)
            elif isinstance(step, WholeOp):
                self._whole(step.instruction)
            elif isinstance(step, Release):
                self._release(step.base, plan.temporaries)
        return self.deps.ops

    def _next(self) -> int:
        self._seq += 1
        return self._seq

    def _block_bytes(self, base: int) -> int:
        return self.block_elements * self.storage.decl(base).dtype.itemsize

    def _view_blocks(self, view: View) -> list[tuple[int, int]]:
        low, high = view.byte_extent()
        return [(view.base, k) for k in base_blocks(low, high, self._block_bytes(view.base))]

    def _group(self, group: Group, temporaries: set[int]) -> None:
        program = lower(group, temporaries, self.block_elements)
        self.counts.groups += 1
        self.counts.fused_instructions += len(group.instructions)
        kernels = None
        if compilable(program):
            self.counts.compilable_groups += 1
            if self.kernels.mode is not CompileMode.OFF:
                self.kernels.lookup(program)  # starts (or, in sync mode, finishes) compilation
                kernels = self.kernels
        runner = GroupRunner(program, self.storage, kernels)
        self.runners.append(runner)
        part = program.partition
        arrays = [slot for slot in program.slots if slot.kind == ARRAY]
        bases = tuple({slot.base for slot in arrays})
        access_lists = [self._slot_blocks(program, slot) for slot in arrays]
        ops = []
        for index in range(len(part)):
            reads: list[tuple[int, int]] = []
            writes: list[tuple[int, int]] = []
            for slot, blocks in zip(arrays, access_lists):
                (writes if slot.written else reads).extend(blocks[index])
            ops.append(BlockOp(self._next(), partial(runner.run, index), tuple(reads), tuple(writes), bases, label=f"kernel {self.counts.groups}.{index}"))
        self.deps.insert_group(ops)
        if program.reduction is not None:
            output = program.reduction.output
            fold = partial(self._fold, program, ops, output)
            op = BlockOp(self._next(), fold, (), tuple(self._view_blocks(output)), (output.base,), inline=True, label="fold")
            self.deps.insert_group([op], after=ops)

    def _fold(self, program: KernelProgram, ops: list[BlockOp], output: View) -> None:
        with np.errstate(all="ignore"):
            finalize(program, [op.result for op in ops], self.storage.array(output))

    def _slot_blocks(self, program: KernelProgram, slot) -> list[list[tuple[int, int]]]:
        """Base-blocks that each view-block of ``slot`` touches (vectorised over blocks)."""
        part = program.partition
        count = len(part)
        if count == 0:
            return []
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
        block_bytes = self._block_bytes(slot.base)
        firsts = (lows // block_bytes).tolist()
        lasts = ((highs - 1) // block_bytes).tolist()
        base = slot.base
        return [[(base, k) for k in range(first, last + 1)] for first, last in zip(firsts, lasts)]

    def _whole(self, instruction: Instruction) -> None:
        self.counts.whole_ops += 1
        reads = [key for view in instruction.inputs if isinstance(view, View) for key in self._view_blocks(view)]
        writes = [key for view in instruction.outputs for key in self._view_blocks(view)]
        bases = tuple({view.base for view in (*instruction.inputs, *instruction.outputs) if isinstance(view, View)})
        exclusive = spec(instruction.op).kind is Kind.LINALG
        run = partial(self._run_whole, instruction)
        self.deps.insert(BlockOp(self._next(), run, tuple(reads), tuple(writes), bases, exclusive=exclusive, label=instruction.op))

    def _run_whole(self, instruction: Instruction) -> None:
        storage = self.storage
        outs = [storage.array(view) for view in instruction.outputs]
        ins = [operand.value if isinstance(operand, Const) else storage.array(operand) for operand in instruction.inputs]
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
        self.deps.insert(BlockOp(self._next(), partial(self.storage.release, base), (), writes, inline=True, label="release"))

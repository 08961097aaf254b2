"""Reordering a batch so that element-wise instructions over one iteration shape sit together.

Planning fuses only *consecutive* element-wise instructions of one shape, and programs interleave
shapes: lattice_boltzmann.py computes ``ux**2 + uy**2`` over (ny, nx) between instructions over
(9, ny, nx), which cut its collision step into four kernels whose intermediates (37 MB each at
1024 x 512) go to memory. Here an instruction that would end the current run of one shape moves
in front of that run when it touches no base that the run writes and writes no base that the
run touches (a release counts as a write), so the run goes on. Every opcode is a function of its
operands, so any order that keeps these dependencies computes the same values.

Only work no larger than the run's iteration space moves, and at most ``MAX_MOVED`` instructions
per run: moving a day of black_scholes.py (4M-element arrays) ahead of the scalar ``total +=``
before it also moved it ahead of the previous day's releases and tripled peak memory.
"""

from __future__ import annotations

import math

from shoal.bytecode import Batch, GroupOp, Instruction, Kind, View, spec

MAX_MOVED = 32

MOVABLE_KINDS = frozenset(
    {Kind.ELEMENTWISE, Kind.REDUCTION, Kind.SCAN, Kind.MOVEMENT, Kind.CREATION, Kind.INDEXING, Kind.LINALG, Kind.SORTING}
)


def run_shape(instruction: Instruction) -> tuple[int, ...] | None:
    """The iteration shape an instruction can fuse over, or None if it runs on its own."""
    if instruction.op in GroupOp.FUSED_ELEMENTWISE:
        shapes = {view.shape for view in instruction.outputs}
        return shapes.pop() if len(shapes) == 1 else None
    return None


def reorder_by_shape(batch: Batch) -> Batch:
    """``batch`` with its instructions reordered into longer runs of one shape (same values)."""
    order: list[Instruction] = []
    start = 0  # where the current run begins in ``order``
    shape: tuple[int, ...] | None = None
    moved_here = 0  # instructions moved ahead of the current run
    touched: set[int] = set()  # bases the run reads or writes
    written: set[int] = set()  # bases the run writes (or releases)
    moved = False
    for instruction in batch.instructions:
        if instruction.op == "release":
            order.append(instruction)
            base = instruction.attr("base")
            touched.add(base)
            written.add(base)
            continue
        own = run_shape(instruction)
        reads = {value.base for value in instruction.inputs if isinstance(value, View)}
        writes = {view.base for view in instruction.outputs}
        if own is not None and own == shape:
            order.append(instruction)
        elif shape is not None and _may_move(instruction, shape, moved_here) and not (reads & written or writes & touched):
            order.insert(start, instruction)
            start += 1
            moved = True
            moved_here += 1
            continue
        else:
            order.append(instruction)
            start = len(order) - 1
            shape = own
            moved_here = 0
            touched, written = set(), set()
            if own is None:
                start = len(order)
                continue
        touched |= reads | writes
        written |= writes
    if not moved:
        return batch
    return Batch(bases=batch.bases, data=batch.data, instructions=order, donated=batch.donated)


def _may_move(instruction: Instruction, run: tuple[int, ...], moved: int) -> bool:
    if moved >= MAX_MOVED or spec(instruction.op).kind not in MOVABLE_KINDS:
        return False
    largest = max((math.prod(view.shape) for view in instruction.outputs), default=0)
    return largest <= math.prod(run)

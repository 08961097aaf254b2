"""Reordering a batch so that element-wise instructions over one iteration shape sit together.

Planning fuses only *consecutive* element-wise instructions of one shape, and programs interleave
shapes: lattice_boltzmann.py computes ``ux**2 + uy**2`` over (ny, nx) between instructions over
(9, ny, nx), which cut its collision step into four kernels whose intermediates (37 MB each at
1024 x 512) go to memory. Here an instruction that would end the current run of one shape moves
in front of that run when it touches no base that the run writes and writes no base that the
run touches (a release counts as a write), so the run goes on. Every opcode is a function of its
operands, so any order that keeps these dependencies computes the same values.
"""

from __future__ import annotations

from shoal.bytecode import Batch, Instruction, Kind, View, spec

MOVABLE_KINDS = frozenset(
    {Kind.ELEMENTWISE, Kind.REDUCTION, Kind.SCAN, Kind.MOVEMENT, Kind.CREATION, Kind.INDEXING, Kind.LINALG, Kind.SORTING}
)


def run_shape(instruction: Instruction) -> tuple[int, ...] | None:
    """The iteration shape an instruction can fuse over, or None if it runs on its own."""
    if instruction.op in ("copy", "fill") or spec(instruction.op).kind is Kind.ELEMENTWISE:
        shapes = {view.shape for view in instruction.outputs}
        return shapes.pop() if len(shapes) == 1 else None
    return None


def cluster(batch: Batch) -> Batch:
    """``batch`` with its instructions reordered into longer runs of one shape (same values)."""
    order: list[Instruction] = []
    start = 0  # where the current run begins in ``order``
    shape: tuple[int, ...] | None = None
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
        elif shape is not None and _movable(instruction) and not (reads & written or writes & touched):
            order.insert(start, instruction)
            start += 1
            moved = True
            continue
        else:
            order.append(instruction)
            start = len(order) - 1
            shape = own
            touched, written = set(), set()
            if own is None:
                start = len(order)
                continue
        touched |= reads | writes
        written |= writes
    if not moved:
        return batch
    return Batch(bases=batch.bases, data=batch.data, instructions=order, donated=batch.donated)


def _movable(instruction: Instruction) -> bool:
    return spec(instruction.op).kind in MOVABLE_KINDS

"""Own rows for the program's arrays, the rows their readers need for a batch's temporaries.

With own rows (:mod:`shoal.cluster.halo`) every rank computes exactly the rows of each output it
owns. A temporary is often read shifted by a row: shallow water combines fluxes of
``height[:-1]`` with fluxes of ``height[1:]``, so the rank that owns face ``i`` of one owns face
``i + 1`` of the other, and every such combination waited for a row computed by the neighbour.
Each of the nine such messages of a step cut the step's work on both ranks into another
node-engine batch (13 a step per rank where one process runs one), most too small to be fused.

A temporary (a base the batch releases) written by one instruction is instead computed over
every row its readers read, found backwards from the end of the batch: the program's arrays
(and temporaries written more than once) keep their own rows, and a temporary gets the rows that
the rows computed of its readers read, as long as the rank holds the inputs of those rows
(its own rows and halo). Its inputs' halo rows then come in the exchanges at the start of the
step, and the rest of the step runs on each rank's own memory, the same rows every step.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from shoal.bytecode import Kind, spec
from shoal.cluster.halo import (
    Operands,
    halo_operands,
    held_reads,
    local_bounds,
    read_bytes,
    rows_overlapping,
    widen,
)

if TYPE_CHECKING:
    from shoal.bytecode import Instruction
    from shoal.cluster.plan import Planner

Rows = list[tuple[int, int]]  # per rank, rows [begin, end) of an instruction's output
Spans = list[tuple[int, int]]  # per rank, bytes [low, high) of a base


@dataclass
class RowPlan:
    """What own-row planning needs to know of a whole batch in advance: the rows of its
    temporaries (by the position of the instruction that writes each), and where it reads and
    writes the program's arrays with halos, so that an exchange can bring every halo row the
    batch reads before that array's next write at once."""

    rows: dict[int, Rows] = field(default_factory=dict)
    reads: dict[int, list[tuple[int, Spans]]] = field(default_factory=dict)  # base -> (position, bytes read per rank), in program order
    writes: dict[int, list[int]] = field(default_factory=dict)  # base -> positions writing it

    def upcoming(self, position: int) -> dict[int, Spans]:
        """Per base: the bytes each rank reads of it from ``position`` on, up to its next write
        (the reads of that instruction included: they come before its write)."""
        result: dict[int, Spans] = {}
        for base, reads in self.reads.items():
            writes = self.writes.get(base, [])
            following = bisect_left(writes, position)
            stop = writes[following] if following < len(writes) else None
            for index in range(bisect_left(reads, (position,)), len(reads)):
                at, spans = reads[index]
                if stop is not None and at > stop:
                    break
                widen(result, base, spans)
        return result


def plan_rows(planner: Planner, instructions: list[Instruction], elementwise: frozenset[str]) -> RowPlan:
    """The :class:`RowPlan` of ``instructions``: each temporary written once is computed over
    the rows its readers read, found backwards from the end."""
    plan = RowPlan()
    for position, instruction in enumerate(instructions):
        for view in instruction.outputs:
            plan.writes.setdefault(view.base, []).append(position)
    extendable = {base for base in planner.temporaries if len(plan.writes.get(base, ())) == 1}
    needed: dict[int, Spans] = {}  # temporary base -> per rank, bytes its readers read
    result = plan.rows
    for position in range(len(instructions) - 1, -1, -1):
        instruction = instructions[position]
        if instruction.op == "release" or not (spec(instruction.op).kind is Kind.ELEMENTWISE or instruction.op in elementwise):
            continue
        operands = halo_operands(planner, instruction)
        if operands is None:
            continue
        out = operands.views[0]
        rows = list(operands.owned)
        wanted = needed.get(out.base)
        if wanted is not None:
            rows = _extended(planner, operands, rows, wanted)
            if rows != list(operands.owned):
                result[position] = rows
        for view, geometry in zip(operands.views[1:], operands.rows[1:]):
            if view.base in extendable and view.base != out.base:
                widen(needed, view.base, [read_bytes(geometry, begin, end) for begin, end in rows])
            elif view.base not in planner.temporaries:
                plan.reads.setdefault(view.base, []).append((position, held_reads(planner, view.base, geometry, rows)))
    for reads in plan.reads.values():
        reads.reverse()  # found backwards: in program order, for bisection
    return plan


def _extended(planner: Planner, operands: Operands, owned: Rows, wanted: list[tuple[int, int]]) -> Rows:
    """Each rank's own rows of the output, widened to the rows whose bytes its readers read and
    whose inputs the rank holds (its own and halo rows)."""
    out, geometry = operands.views[0], operands.rows[0]
    count = out.shape[0]
    rows = []
    for rank, ((mine_begin, mine_end), (low, high)) in enumerate(zip(owned, wanted)):
        if mine_end <= mine_begin or high <= low:
            rows.append((mine_begin, mine_end))
            continue
        first, last = rows_overlapping(geometry, count, low, high)
        held_begin, held_end = local_bounds(planner, operands, rank)
        begin, end = max(min(first, mine_begin), held_begin), min(max(last, mine_end), held_end)
        rows.append((min(begin, mine_begin), max(end, mine_end)))
    return rows

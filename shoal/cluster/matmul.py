"""``matmul``/``dot`` of distributed matrices by panels of the inner dimension (issue 11 item 5).

The output ``C = A @ B`` (``A`` 2-D, ``B`` 1-D or 2-D) is computed where its rows live: a rank
holding rows ``R`` of ``C`` forms ``C[R] = sum over panels P of A[R, P] @ B[P]``, where the
panels cut the inner dimension at the bounds of ``B``'s row blocks. Each panel ``B[P]`` comes in
one message from the rank that holds it (each ``A[R, P]`` too, unless it is local), and a rank
starts with the panel it holds itself, then takes the others in ring order, so its first product
needs no message and each later panel travels while the previous product runs.

This is SUMMA (van de Geijn and Watts) on a one-dimensional process grid: with the cluster's row
block layout every rank holds whole rows, so a two-dimensional grid would need the operands
redistributed first. With a two-dimensional block-cyclic layout an output piece is one block
``C[R, K]``; its panels cut ``B[:, K]`` where that changes rank, and a panel spanning ranks is
assembled at the rank computing the piece. Every rank still receives all of ``B``, one panel per message straight from
its owner, never a whole replicated copy assembled first; panels are summed in a fixed order, so
results are the same from run to run (and exact for integers and booleans).
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING

from shoal.bytecode import BaseDecl, Instruction, View
from shoal.cluster.cyclic import CyclicLayout
from shoal.cluster.layout import TooFragmented, held_at, owner, split, sub_view
from shoal.cluster.ops import release_of

if TYPE_CHECKING:
    from shoal.cluster.plan import Planner

PANELS_PER_RANK = 4  # more panels than this per rank (a view that cuts B finely): one panel


def plan_matmul(planner: Planner, instruction: Instruction) -> bool:
    """Plan ``matmul``/``dot`` of a 2-D left operand by the output's rows and ``B``'s panels;
    False (before planning anything) for a case this does not cover."""
    from shoal.cluster.plan import access

    if instruction.op not in ("matmul", "dot") or instruction.attrs:
        return False
    left, right = instruction.inputs
    out = instruction.outputs[0]
    if not (isinstance(left, View) and isinstance(right, View)) or left.ndim != 2 or right.ndim not in (1, 2) or out.ndim != right.ndim:
        return False
    if out.size == 0 or left.shape[1] == 0 or out.base in (left.base, right.base) or out.dtype.kind not in "biufc":
        return False
    if not any(planner.layouts[view.base].distributed for view in (left, right, out)):
        return False
    try:
        pieces = split([(out, planner.layouts[out.base])], out.shape, planner.config.max_pieces)
        panels_of = {columns: _panels(planner, _columns(right, columns)) for columns in {box[1:] for box, _ in pieces}}
    except TooFragmented:
        return False
    if not isinstance(planner.layouts[out.base], CyclicLayout) and any(out.ndim == 2 and box[1] != (0, out.shape[1]) for box, _ in pieces):
        return False  # the row layout keeps whole rows per piece
    temps: list[int] = []
    received: dict[tuple, View] = {}  # (rank, columns, panel) -> the panel of B readable there
    for box, (runner,) in pieces:
        rows, columns = box[0], box[1:]
        panels = panels_of[columns]
        target = planner.local_view(sub_view(out, box)) if planner.rank == runner else None
        for turn, number in enumerate(_ring(panels, runner)):
            inner, _ = panels[number]
            if (runner, columns, number) not in received:
                received[(runner, columns, number)] = _operand_at(planner, sub_view(right, (inner, *columns)), runner, temps)
            panel = received[(runner, columns, number)]
            rows_panel = _operand_at(planner, sub_view(left, (rows, inner)), runner, temps)
            if planner.rank != runner:
                continue
            assert target is not None
            if turn == 0:
                product = Instruction(instruction.op, (target,), (rows_panel, panel))
                planner.ops.append(planner.compute([product], reads=[access(rows_panel), access(panel)], writes=[access(target)]))
                continue
            temp = planner._new_local()
            partial = _contiguous(temp, target)
            steps = [Instruction(instruction.op, (partial,), (rows_panel, panel)), Instruction("add", (target,), (target, partial)), release_of(temp)]
            planner.ops.append(
                planner.compute(
                    steps,
                    reads=[access(rows_panel), access(panel), access(target)],
                    writes=[access(target), (temp, 0, 1 << 62)],
                    declares=[BaseDecl(temp, target.dtype, math.prod(target.shape))],
                )
            )
    for temp in temps:
        planner.ops.append(planner.compute([release_of(temp)], writes=[(temp, 0, 1 << 62)]))
    return True


def _panels(planner: Planner, right: View) -> list[tuple[tuple[int, int], int]]:
    """The inner dimension cut where ``right``'s rows change rank: (range, holder or -1)."""
    layout = planner.layouts[right.base]
    inner = right.shape[0]
    if not layout.distributed or inner == 0:
        return [((0, inner), owner(right, layout))]
    pieces = split([(right, layout)], right.shape, planner.config.max_pieces)
    bounds = sorted({0, inner, *(bound for box, _ in pieces for bound in box[0])})
    if len(bounds) - 1 > PANELS_PER_RANK * planner.ranks:
        return [((0, inner), -1)]
    panels = []
    rest = tuple((0, n) for n in right.shape[1:])
    for low, high in itertools.pairwise(bounds):
        panels.append(((low, high), owner(sub_view(right, ((low, high), *rest)), layout)))
    return panels


def _columns(right: View, columns: tuple[tuple[int, int], ...]) -> View:
    """``right`` restricted to the output columns ``columns`` (all of it when ``right`` is 1-D)."""
    return sub_view(right, ((0, right.shape[0]), *columns))


def _ring(panels: list[tuple[tuple[int, int], int]], rank: int) -> list[int]:
    """Panel numbers starting from the first one ``rank`` holds, then in ring order."""
    first = next((number for number, (_, holder) in enumerate(panels) if holder == rank), 0)
    return [(first + step) % len(panels) for step in range(len(panels))]


def _operand_at(planner: Planner, view: View, rank: int, temps: list[int]) -> View:
    """``view`` readable at ``rank``: its local view if it lives there whole, else a copy."""
    if held_at(view, planner.layouts[view.base], rank):
        return planner.local_view(view) if planner.rank == rank else view
    return planner._assemble(view, temps, True, at=rank)


def _contiguous(base: int, like: View) -> View:
    from shoal.cluster.plan import contiguous

    return contiguous(base, like.dtype, like.shape)


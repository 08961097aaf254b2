"""``source[index]`` along the leading axis where the result lives (issue 11 item 2).

Indexing the leading axis with a small integer array (lattice Boltzmann's
``populations[OPPOSITE]``, a permutation of its 9 populations) reads, for each position of the
trailing axes, elements of that same position only. When the leading axis is not split (the
layout keeps every index of it together: :func:`shoal.cluster.layout.components_first`), the
trailing box cuts into pieces where the whole leading axis of the result and of the source lie on
one rank, and that rank gathers its piece from its own memory. The index array, a small base,
travels once to each rank that runs a piece. Anything else (an index split over ranks, a source
whose leading axis is split) returns False and runs gathered at rank 0 as before.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shoal.bytecode import Instruction, View
from shoal.cluster.layout import AnyLayout, Box, TooFragmented, owner, split, sub_view
from shoal.cluster.ops import Op, access, release_of

if TYPE_CHECKING:
    from shoal.cluster.plan import Planner

LEADING_KEY = (("array", 0),)


def plan_leading_gather(planner: Planner, instruction: Instruction) -> bool:
    """Plan a ``gather`` of the leading axis by a 1-D index piece by piece where the result lives;
    False (before planning anything) for a case this does not cover."""
    if instruction.op != "gather" or instruction.attr("key") != LEADING_KEY or len(instruction.inputs) != 2:
        return False
    (result,), (source, index) = instruction.outputs, instruction.inputs
    if not isinstance(source, View) or not isinstance(index, View) or index.ndim != 1 or result.ndim < 2:
        return False
    if source.ndim != result.ndim or source.shape[1:] != result.shape[1:] or source.base == result.base:
        return False
    layouts = planner.layouts
    if layouts[index.base].distributed or not layouts[result.base].distributed or 0 in result.shape:
        return False
    index_owner = owner(index, layouts[index.base])
    pieces = _pieces(result, source, layouts[result.base], layouts[source.base], planner.config.max_pieces)
    if pieces is None or index_owner < 0:
        return False
    runners = sorted({runner for _, runner in pieces})
    temps: list[int] = []
    index_view = _index_on_runners(planner, index, index_owner, runners, temps)
    computes = []
    for box, runner in pieces:
        if runner != planner.rank:
            continue
        out = planner.local_view(_whole_leading(result, box))
        src = planner.local_view(_whole_leading(source, box))
        computes.append(
            Op(
                "compute",
                reads=[access(src), access(index_view)],
                writes=[access(out)],
                instructions=[Instruction("gather", (out,), (src, index_view), instruction.attrs)],
            )
        )
    planner.ops.extend(computes)
    for temp in temps:
        planner.ops.append(Op("compute", writes=[(temp, 0, 1 << 62)], instructions=[release_of(temp)]))
    return True


def _pieces(result: View, source: View, result_layout: AnyLayout, source_layout: AnyLayout, limit: int) -> list[tuple[Box, int]] | None:
    """The boxes of the trailing axes with the rank holding both whole leading axes there, or
    None when some box has no such rank."""
    trailing = result.shape[1:]
    first = [(_leading_row(result, 0), result_layout), (_leading_row(source, 0), source_layout)]
    try:
        boxes = split(first, trailing, limit)
    except TooFragmented:
        return None
    pieces = []
    for box, owners in boxes:
        runner = owners[0]
        whole = ((_whole_leading(result, box), result_layout), (_whole_leading(source, box), source_layout))
        if any(owner(view, layout) != runner for view, layout in whole):
            return None
        pieces.append((box, runner))
    return pieces


def _leading_row(view: View, row: int) -> View:
    """Index ``row`` of ``view``'s leading axis, as a view of the trailing axes."""
    return View(view.base, view.dtype, view.offset + row * view.strides[0], view.shape[1:], view.strides[1:])


def _whole_leading(view: View, box: Box) -> View:
    """``view``'s part in ``box`` of its trailing axes, with its whole leading axis."""
    return sub_view(view, ((0, view.shape[0]), *box))


def _index_on_runners(planner: Planner, index: View, index_owner: int, runners: list[int], temps: list[int]) -> View:
    """The index as this rank reads it: its own memory on the index's owner, else a copy
    assembled from one message (its temporary base goes to ``temps``)."""
    here = index
    for runner in runners:
        if runner != index_owner:
            copy = planner._assemble(index, temps, True, at=runner)
            if runner == planner.rank:
                here = copy
    return planner.local_view(index) if planner.rank == index_owner else here

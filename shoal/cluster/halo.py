"""Halo rows: element-wise instructions computed on a rank's own rows and its copies of its
neighbours' rows, so that a stencil sweep is one local instruction per rank and several sweeps
need one exchange (paper 003 §5.7 moves a sub-view-block per operation instead).

A distributed base with a halo (:attr:`shoal.cluster.layout.Layout.halo`) is held by each rank
with ``halo`` elements of its neighbours on each side. The planner tracks, for every rank, which
bytes of its local range are current (``valid``: one interval around the rank's own range; its
own range is always current, since the owner computes or receives every write to it).

:func:`plan_with_halos` runs an element-wise instruction whose operands all have halos as one
piece per rank: rank ``r`` computes the rows ``[a, b)`` of the iteration box (the leading axis)
whose inputs are current and whose outputs are local to it, which must include every row whose
output it owns. Rows beyond its own are computed again by their owner: that redundant work keeps
the halo current for the next instruction. When the inputs' halos are too stale for that, every
rank first sends its own rows that lie in another's halo (:func:`exchange`); after it, halos are
current again. A sweep that reads one row further each way costs one halo row of currency, so
``h`` halo rows make ``h`` sweeps per exchange.

That is the *redundant* mode. In the *own rows* mode (``PlanConfig.redundant_rows`` false, chosen
on fast links by :mod:`shoal.cluster.link`) each rank computes exactly the rows it owns, and the
ranks exchange before an instruction whose own rows read halo rows that are not current: every
sweep of a rank then has the same shapes, which its node engine fuses into one kernel.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING

from shoal.bytecode import Instruction, View
from shoal.cluster import interior_first
from shoal.cluster.layout import Layout, broadcast_to, sub_view

if TYPE_CHECKING:
    from shoal.cluster.plan import Planner

Valid = tuple[tuple[int, int], ...]  # per rank: the current bytes [low, high) of its local range
Rows = tuple[int, int, int, int]  # a view's offset, leading stride, and one row's extent (low, high) past the offset


def owned_bytes(layout: Layout, rank: int) -> tuple[int, int]:
    return layout.starts[rank] * layout.itemsize, layout.starts[rank + 1] * layout.itemsize


def local_bytes(layout: Layout, rank: int) -> tuple[int, int]:
    return layout.local_bytes[rank]


def initial_valid(layout: Layout, ranks: int, filled: bool) -> Valid:
    """A new base's current bytes: all it holds if it came with data, else its own range."""
    return tuple(local_bytes(layout, rank) if filled else owned_bytes(layout, rank) for rank in range(ranks))


def invalidate(planner: Planner, instruction: Instruction) -> None:
    """The halos of ``instruction``'s outputs, written some other way, are out of date."""
    for view in instruction.outputs:
        if view.base in planner.valid:
            layout = planner.layouts[view.base]
            planner.valid[view.base] = initial_valid(layout, planner.ranks, False)


def _rows(view: View) -> Rows | None:
    """How ``view``'s rows (its leading axis) lie in its base; None for a reversed leading axis."""
    stride = view.strides[0]
    if stride < 0:
        return None
    low, high = View(view.base, view.dtype, view.offset, (1, *view.shape[1:]), view.strides).byte_extent()
    return view.offset, stride, low - view.offset, high - view.offset


def rows_within(rows: Rows, count: int, low: int, high: int) -> tuple[int, int]:
    """The rows ``[a, b)`` of a view (``count`` rows) whose bytes lie in ``[low, high)``."""
    offset, stride, first, last = rows
    if stride == 0:
        return (0, count) if low <= offset + first and offset + last <= high else (count, 0)
    begin = -((offset + first - low) // stride)  # ceil((low - offset - first) / stride)
    end = (high - offset - last) // stride + 1
    return max(0, begin), min(count, end)


def owned_rows(view: View, layout: Layout, ranks: int) -> list[tuple[int, int]] | None:
    """The rows of ``view`` (its leading axis) whose elements each rank owns under ``layout``;
    None if a row spans ranks or the rows run backwards."""
    rows = _rows(view)
    return None if rows is None or not view.shape else _owned_rows(rows, view.shape[0], layout, ranks)


def _owned_rows(rows: Rows, count: int, layout: Layout, ranks: int) -> list[tuple[int, int]] | None:
    """The rows of an output view whose elements each rank owns; None if a row spans ranks."""
    stride = rows[1]
    if stride == 0 and count > 1:
        return None
    starts = layout.starts
    item = layout.itemsize
    result = []
    covered = 0
    for rank in range(ranks):  # rows lie in the base in order: each rank's are one range
        begin, end = rows_within(rows, count, starts[rank] * item, starts[rank + 1] * item)
        if end > begin:
            result.append((begin, end))
            covered += end - begin
        else:
            result.append((0, 0))
    return result if covered == count else None


def _boxes(planner: Planner, views: list[View], rows: list[Rows], owned: list[tuple[int, int]], valid: list[Valid]) -> list[tuple[int, int]] | None:
    """Each rank's rows of the iteration box (its own rows and as many more as its current data
    allows), or None if some rank cannot compute all of its own."""
    count = views[0].shape[0]
    boxes = []
    for rank in range(planner.ranks):
        begin, end = 0, count
        for position, (view, geometry) in enumerate(zip(views, rows)):
            if position == 0:
                low, high = local_bytes(planner.layouts[view.base], rank)
            else:
                low, high = valid[position - 1][rank]
            first, last = rows_within(geometry, count, low, high)
            begin, end = max(begin, first), min(end, last)
        mine_begin, mine_end = owned[rank]
        if mine_end > mine_begin and not (begin <= mine_begin and mine_end <= end):
            return None
        boxes.append((begin, end) if end > begin else (0, 0))
    return boxes


def plan_with_halos(planner: Planner, instruction: Instruction) -> bool:
    """Plan element-wise ``instruction`` as one piece per rank over its halos (exchanging them
    first if they are too stale); False if it cannot be, and nothing was planned."""
    operands = halo_operands(planner, instruction)
    if operands is None:
        return False
    views, rows, owned = operands.views, operands.rows, operands.owned
    out = views[0]
    low, high = out.byte_extent()
    for view in instruction.inputs:  # an input overlapping the output must be the output itself
        if isinstance(view, View) and view.base == out.base and view != out:
            other_low, other_high = view.byte_extent()
            if other_low < high and low < other_high:
                return False
    if _boxes(planner, views, rows, owned, [_local(planner, view.base) for view in views[1:]]) is None:
        return False
    if not planner.redundant_rows:
        return _plan_owned(planner, instruction, views, rows, owned)
    readers = later_readers(planner, out) if out.base in planner.temporaries else None
    boxes = _boxes(planner, views, rows, owned, [planner.valid[view.base] for view in views[1:]])
    if boxes is not None and readers and readers[0].needs_exchange(planner, out, rows[0], boxes):
        boxes = None  # its first reader will exchange its other inputs: do it now, for both
    if boxes is None:
        bases = [view.base for view in views[1:]] + (readers[0].other_bases(out.base) if readers else [])
        exchange(planner, list(dict.fromkeys(bases)))
        boxes = _boxes(planner, views, rows, owned, [planner.valid[view.base] for view in views[1:]])
        assert boxes is not None
    if readers:
        boxes = _read_rows(planner, readers, out, rows[0], owned, boxes)
    begin, end = boxes[planner.rank]
    if end > begin:
        _compute_rows(planner, instruction, views, begin, end)
    planner.valid[out.base] = _written(planner, out, rows[0], boxes)
    return True


def _local(planner: Planner, base: int) -> Valid:
    layout = planner.layouts[base]
    return tuple(local_bytes(layout, rank) for rank in range(planner.ranks))


def local_bounds(planner: Planner, operands: Operands, rank: int) -> tuple[int, int]:
    """The rows of ``operands``' output that ``rank`` could compute with every operand's rows
    that it holds (its own and its halo) current."""
    count = operands.views[0].shape[0]
    begin, end = 0, count
    for view, geometry in zip(operands.views, operands.rows):
        first, last = rows_within(geometry, count, *local_bytes(planner.layouts[view.base], rank))
        begin, end = max(begin, first), min(end, last)
    return begin, max(begin, end)


def _plan_owned(planner: Planner, instruction: Instruction, views: list[View], rows: list[Rows], owned: list[tuple[int, int]]) -> bool:
    """Every rank computes exactly the rows it owns, after receiving the rows of its
    neighbours that they read and it does not hold current: each rank computes the same rows
    every time, so a loop's sweeps are alike for its node engine (which fuses each sweep into
    one kernel and keeps its temporaries in registers), at the cost of an exchange before most
    sweeps."""
    owned = planner.row_plan.rows.get(planner.position, owned)  # a temporary: the rows its readers read
    needed: dict[int, list[tuple[int, int]]] = {}  # per input base and rank: the bytes its own rows read
    for view, geometry in zip(views[1:], rows[1:]):
        widen(needed, view.base, held_reads(planner, view.base, geometry, owned))
    stale = []
    for base, spans in needed.items():
        # An exchange refreshes all that the ranks' own rows have read of this base so far: a
        # sweep's first instruction then brings both sides of the halo at once, before the
        # sweep computes anything, and the sweep reaches the node engine as one batch.
        _demand(planner, base, spans)
        if not _current(planner, base, spans):
            stale.append(base)
    if stale:
        # With it come the halo rows of the other arrays that the batch reads before it writes
        # them again: one exchange, one wait, instead of one for each array.
        for base, spans in planner.row_plan.upcoming(planner.position).items():
            if base not in stale and base in planner.valid and not _current(planner, base, spans):
                _demand(planner, base, spans)
                stale.append(base)
        if planner.config.interior_first:
            interior_first.begin(planner)
        exchange(planner, stale, {base: list(planner.demand[base]) for base in stale})
    begin, end = owned[planner.rank]
    if end > begin:
        _compute_rows(planner, instruction, views, begin, end)
    interior_first.planned(planner, instruction, views, rows, owned[planner.rank])
    planner.valid[views[0].base] = _written(planner, views[0], rows[0], owned)
    return True


def held_reads(planner: Planner, base: int, geometry: Rows, rows: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Per rank, the bytes of ``base`` that its ``rows`` of a view of it (laid out as
    ``geometry``) read, within what the rank holds; ``(0, 0)`` for a rank that computes none."""
    layout = planner.layouts[base]
    spans = []
    for rank, (begin, end) in enumerate(rows):
        if end <= begin:
            spans.append((0, 0))
            continue
        low, high = read_bytes(geometry, begin, end)
        local_low, local_high = local_bytes(layout, rank)
        spans.append((max(local_low, low), min(local_high, high)))
    return spans


def _demand(planner: Planner, base: int, spans: list[tuple[int, int]]) -> None:
    demand = planner.demand.get(base)
    planner.demand[base] = tuple(spans if demand is None else (hull(span, known) for span, known in zip(spans, demand)))


def _current(planner: Planner, base: int, spans: list[tuple[int, int]]) -> bool:
    valid = planner.valid[base]
    return all(valid[rank][0] <= low and high <= valid[rank][1] for rank, (low, high) in enumerate(spans) if high > low)


def widen(spans_by_base: dict[int, list[tuple[int, int]]], base: int, spans: list[tuple[int, int]]) -> None:
    """Widen ``spans_by_base[base]`` (a byte range per rank) to hold ``spans`` too."""
    known = spans_by_base.get(base)
    spans_by_base[base] = spans if known is None else [hull(one, other) for one, other in zip(known, spans)]


def hull(one: tuple[int, int], other: tuple[int, int]) -> tuple[int, int]:
    """The smallest byte range holding both (an empty one holds nothing)."""
    if one[1] <= one[0]:
        return other
    if other[1] <= other[0]:
        return one
    return min(one[0], other[0]), max(one[1], other[1])


def _compute_rows(planner: Planner, instruction: Instruction, views: list[View], begin: int, end: int) -> None:
    """This rank's rows ``[begin, end)`` of element-wise ``instruction`` (whose output and input
    views, broadcast to its shape, are ``views``) as one computation."""
    from shoal.cluster.plan import access

    box = ((begin, end), *((0, n) for n in views[0].shape[1:]))
    local_out = planner.local_view(instruction.outputs[0], box)
    broadcast = iter(views[1:])
    local_inputs = [planner.local_view(sub_view(next(broadcast), box)) if isinstance(operand, View) else operand for operand in instruction.inputs]
    planner.ops.append(
        planner.compute(
            [Instruction(instruction.op, (local_out,), tuple(local_inputs), instruction.attrs)],
            reads=[access(view) for view in local_inputs if isinstance(view, View)],
            writes=[access(local_out)],
        )
    )


def _written(planner: Planner, out: View, rows: Rows, boxes: list[tuple[int, int]]) -> Valid:
    """The output base's current bytes per rank once every rank computed its rows of ``out``."""
    layout = planner.layouts[out.base]
    written_low, written_high = out.byte_extent()
    offset, stride, first, last = rows
    # Rows computed extend the current bytes only if they cover every byte between them (a
    # column, say, leaves the bytes between its elements as they were: possibly stale).
    dense = math.prod(out.shape[1:]) * out.dtype.itemsize == last - first and (out.shape[0] == 1 or stride == last - first)
    result = []
    for rank, (begin, end) in enumerate(boxes):
        valid_low, valid_high = planner.valid[out.base][rank]
        own_low, own_high = owned_bytes(layout, rank)
        if end > begin:
            computed_low, computed_high = offset + begin * stride + first, offset + (end - 1) * stride + last
            stale = [(written_low, computed_low), (computed_high, written_high)]
            if dense and computed_low <= valid_high and valid_low <= computed_high:  # what it computed is current too
                valid_low, valid_high = min(valid_low, computed_low), max(valid_high, computed_high)
        else:
            stale = [(written_low, written_high)]
        for stale_low, stale_high in stale:
            if stale_high <= stale_low:
                continue
            if stale_low < own_low:  # below its own range: the halo above it is cut off
                valid_low = max(valid_low, min(stale_high, own_low))
            if stale_high > own_high:
                valid_high = min(valid_high, max(stale_low, own_high))
        result.append((valid_low, max(valid_low, valid_high)))
    return tuple(result)


def exchange(planner: Planner, bases: list[int], wanted: Mapping[int, list[tuple[int, int]]] | None = None) -> None:
    """Every rank sends its own bytes that lie in another rank's stale halo of ``bases`` (in
    each rank's ``wanted`` bytes of a base only, if given); then those halos are current. Messages follow
    one global order (receiver, base side, sender); the copies of arrived rows into a rank's halo
    come after all of its sends, which would otherwise wait for them (its edge rows share a
    dependency block with the halo beside them) and so for the neighbour's message."""
    copies_from = len(planner.ops)
    _exchange(planner, bases, wanted)
    copies = [op for op in planner.ops[copies_from:] if op.kind == "compute"]
    if copies:
        planner.ops[copies_from:] = [op for op in planner.ops[copies_from:] if op.kind != "compute"] + copies


def _exchange(planner: Planner, bases: list[int], wanted_by_base: Mapping[int, list[tuple[int, int]]] | None) -> None:
    for base in bases:
        wanted = None if wanted_by_base is None else wanted_by_base[base]
        layout = planner.layouts[base]
        dtype = planner.decls[base].dtype
        item = layout.itemsize
        valid = planner.valid[base]
        current = []
        for rank in range(planner.ranks):
            valid_low, valid_high = valid[rank]
            want_low, want_high = local_bytes(layout, rank) if wanted is None else wanted[rank]
            if want_high <= want_low:
                current.append(valid[rank])
                continue
            new_low, new_high = min(valid_low, want_low), max(valid_high, want_high)
            current.append((new_low, new_high))
            for missing_low, missing_high in ((new_low, valid_low), (valid_high, new_high)):
                if missing_high <= missing_low:
                    continue
                missing_low, missing_high = missing_low // item * item, -(-missing_high // item) * item
                for sender in range(planner.ranks):
                    if sender == rank:
                        continue
                    own_low, own_high = owned_bytes(layout, sender)
                    low, high = max(missing_low, own_low), min(missing_high, own_high)
                    if high <= low:
                        continue
                    part = View(base, dtype, low, ((high - low) // item,), (item,))
                    tag = planner._next_tag()
                    if planner.rank == sender:
                        planner.ops.append(planner.send(planner.local_view(part), rank, tag))
                    if planner.rank == rank:
                        planner._receive_into(sender, tag, planner.local_view(part))
        planner.valid[base] = tuple(current)


@dataclass(frozen=True)
class Operands:
    """An element-wise instruction as halos plan it: its output and input views (broadcast to
    its shape), their rows in their bases, and each rank's own rows of its output.

    The methods serve an instruction reading a temporary (:func:`later_readers`). Each instruction computes as many redundant rows as its inputs allow, so in ``g[1:-1] +
    g[:-2] + g[2:]`` the first sum could get a row more than the second, or be computed before
    the exchange the second one starts: on a rank whose halo lies on one side the expression's
    instructions then had unequal shapes, and its node engine ran them apart, through memory
    (Jacobi with redundant rows: rank 0's node engine took 4x rank 1's time)."""

    views: list[View]
    rows: list[Rows]
    owned: list[tuple[int, int]]

    def other_bases(self, base: int) -> list[int]:
        """The bases it reads besides ``base``."""
        return [view.base for view in self.views[1:] if view.base != base]

    def boxes(self, planner: Planner, out: View, geometry: Rows, boxes: list[tuple[int, int]], exchanged: bool = False) -> list[tuple[int, int]] | None:
        """Each rank's rows it could compute once ``out`` has ``boxes``, with its other inputs as
        they are (or all current, if ``exchanged``); None if some rank could not compute its own."""
        current = _written(planner, out, geometry, boxes)
        valid = [current if view.base == out.base else _local(planner, view.base) if exchanged else planner.valid[view.base] for view in self.views[1:]]
        return _boxes(planner, self.views, self.rows, self.owned, valid)

    def needs_exchange(self, planner: Planner, out: View, geometry: Rows, boxes: list[tuple[int, int]]) -> bool:
        """Whether it will exchange its other inputs, and that exchange alone lets it compute."""
        return self.boxes(planner, out, geometry, boxes) is None and self.boxes(planner, out, geometry, boxes, exchanged=True) is not None

    def spans(self, planner: Planner, out: View, geometry: Rows, boxes: list[tuple[int, int]]) -> list[tuple[int, int]] | None:
        """Per rank, the bytes of ``out``'s base it reads computing those rows (empty: none)."""
        reading = self.boxes(planner, out, geometry, boxes)
        if reading is None:
            return None
        result = []
        for low_row, high_row in reading:
            spans = [read_bytes(rows, low_row, high_row) for view, rows in zip(self.views[1:], self.rows[1:]) if view.base == out.base]
            spans = [span for span in spans if span[1] > span[0]]
            result.append((min(low for low, _ in spans), max(high for _, high in spans)) if spans else (0, 0))
        return result


def later_readers(planner: Planner, out: View) -> list[Operands] | None:
    """The instructions after the one being planned that read what it writes to ``out``'s base
    (up to the next write of that base), if halos plan every one of them; else None."""
    readers = []
    for later in planner.later[planner.position + 1 :]:
        if later.op == "release" and int(later.attr("base")) == out.base:
            break
        if any(isinstance(view, View) and view.base == out.base for view in later.inputs):
            reader = halo_operands(planner, later)
            if reader is None:
                return None
            readers.append(reader)
        if any(view.base == out.base for view in later.outputs):
            break
    return readers or None


def halo_operands(planner: Planner, instruction: Instruction) -> Operands | None:
    """``instruction``'s operands if halos can plan it: one non-empty output, every operand a
    view of a base with halos whose rows lie in order, each rank's own rows whole; else None.
    Kept for the batch being planned (``Planner.operands``): own-rows planning asks for every
    instruction's twice, and a base leaves ``valid`` only with its release, after its last use."""
    key = id(instruction)
    if key in planner.operands:
        return planner.operands[key]
    found = planner.operands[key] = _halo_operands(planner, instruction)
    return found


def _halo_operands(planner: Planner, instruction: Instruction) -> Operands | None:
    if len(instruction.outputs) != 1:
        return None
    shape = instruction.outputs[0].shape
    if not shape or any(n == 0 for n in shape):
        return None
    views = [instruction.outputs[0], *(broadcast_to(view, shape) for view in instruction.inputs if isinstance(view, View))]
    if any(view.base not in planner.layouts or not planner.layouts[view.base].halo or view.base not in planner.valid for view in views):
        return None
    geometry = [_rows(view) for view in views]
    rows = [value for value in geometry if value is not None]
    if len(rows) != len(views):
        return None
    owned = _owned_rows(rows[0], shape[0], planner.layouts[views[0].base], planner.ranks)
    return None if owned is None else Operands(views, rows, owned)


def _read_rows(planner: Planner, readers: list[Operands], out: View, geometry: Rows, owned: list[tuple[int, int]], boxes: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``boxes`` cut to the rows of ``out`` that ``readers`` read (each rank's own rows kept),
    or ``boxes`` itself if some reader could not compute its own rows."""
    spans = [reader.spans(planner, out, geometry, boxes) for reader in readers]
    if any(found is None for found in spans):
        return boxes
    result = []
    for rank, ((begin, end), (mine_begin, mine_end)) in enumerate(zip(boxes, owned)):
        read = [found[rank] for found in spans if found is not None and found[rank][1] > found[rank][0]]
        if end <= begin or not read:
            result.append((begin, end))
            continue
        first, last = rows_overlapping(geometry, out.shape[0], min(low for low, _ in read), max(high for _, high in read))
        new_begin, new_end = max(begin, first), min(end, last)
        if mine_end > mine_begin:
            new_begin, new_end = min(new_begin, mine_begin), max(new_end, mine_end)
        result.append((new_begin, new_end) if new_end > new_begin else (0, 0))
    return result


def read_bytes(rows: Rows, begin: int, end: int) -> tuple[int, int]:
    """The bytes rows ``[begin, end)`` of a view (by its ``rows``) span."""
    if end <= begin:
        return 0, 0
    offset, stride, first, last = rows
    return offset + begin * stride + first, offset + (end - 1) * stride + last


def rows_overlapping(rows: Rows, count: int, low: int, high: int) -> tuple[int, int]:
    """The rows ``[a, b)`` of a view (``count`` rows) whose bytes meet ``[low, high)``."""
    offset, stride, first, last = rows
    if stride <= 0:
        return 0, count
    begin = (low - offset - last) // stride + 1
    end = -(-(high - offset - first) // stride)
    return max(0, begin), min(count, end)

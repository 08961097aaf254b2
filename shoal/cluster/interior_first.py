"""Interior first: the rows of a sweep that need no halo run while the halo is in flight.

With own rows (:func:`shoal.cluster.halo._plan_owned`) a sweep such as Jacobi's
``g[1:-1, 1:-1] = 0.2 * (g[1:-1, 1:-1] + g[:-2, 1:-1] + ...)`` starts with an exchange, and every
row the rank computes waited for it, though only its edge rows read the halo. Paper 003 §5.7
computes the sub-view-blocks whose data is local while the others' messages travel. Here a
*region* is the instructions from the one that exchanges up to the first that writes one of the
program's arrays, all element-wise over the same rows, the others writing temporaries that only
later instructions of the region read, each as written. If a new exchange or the batch's end
follows it (anything else would run apart from it, in another node-engine batch), each rank runs:

1. the exchange's sends and receives, as planned;
2. the *interior*: a copy of the old bytes of the written array that its edge rows read (its
   *snapshot*: NumPy reads every input before the write, and the interior writes some of them),
   then every instruction of the region over the rows whose inputs were current before the
   exchange, its temporaries fresh ones of those rows, released at once (so the node engine
   fuses the region into one kernel, as it did the whole sweep);
3. the exchange's copies of the arrived rows into the halo;
4. the *edges*: the halo bytes into the snapshot, then the region over the remaining rows,
   reading the written array through the snapshot.

The flush (:mod:`shoal.cluster.flush`) starts the messages, hands the interior to the node
engine when nothing else is ready, and waits only then. The operations are still a valid
program-order schedule (the blocking mode would run them so); each element is computed by the
same instructions as before, so the results are bit for bit those of the sweep planned whole.
Every operation names the instruction of the batch each of its instructions computes
(:attr:`shoal.cluster.ops.Op.positions`), for the floating-point notes.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from shoal.bytecode import BaseDecl, Const, Instruction, View
from shoal.cluster import halo
from shoal.cluster.layout import AnyLayout, broadcast_to, sub_view
from shoal.cluster.ops import Access, Op, access, contiguous, release_of

if TYPE_CHECKING:
    from shoal.cluster.plan import Planner


@dataclass
class Step:
    """One instruction of a region as own-rows planning planned it (``op``: its computation of
    this rank's rows ``[begin, end)`` of its output)."""

    position: int
    instruction: Instruction
    views: list[View]
    rows: list[halo.Rows]
    begin: int
    end: int
    op: Op
    places: dict[int, tuple[AnyLayout, int]]  # its bases' layouts and local bases (a temporary may be released before the region is split)

    def local_view(self, view: View, rank: int) -> View:
        """Global ``view`` of one of its bases as a view of this rank's local base."""
        layout, local = self.places[view.base]
        return layout.local_view(view, rank, local)


@dataclass
class Region:
    """The instructions from an exchange on; ``start``: the index of the exchange's first
    operation; ``valid``: this rank's current bytes of each base with halos before it."""

    start: int
    valid: dict[int, tuple[int, int]]
    steps: list[Step] = field(default_factory=list)


# ---------------------------------------------------------------------- the planner's hooks


def start(planner: Planner) -> None:
    """A batch's planning begins."""
    planner.region = planner.pending = None
    planner.unused = set()
    planner.stamped = 0


def begin(planner: Planner) -> None:
    """An exchange is about to be planned for the instruction at ``planner.position`` (a region
    that ended just before it is split now)."""
    if planner.pending is not None:
        _split(planner, planner.pending)
        planner.pending = None
    rank = planner.rank
    planner.region = Region(len(planner.ops), {base: valid[rank] for base, valid in planner.valid.items()})


def planned(planner: Planner, instruction: Instruction, views: list[View], rows: list[halo.Rows], owned: tuple[int, int]) -> None:
    """Own-rows planning computed this rank's ``owned`` rows of ``instruction`` (its last
    operation, if any rows); a write of one of the program's arrays ends the region."""
    region = planner.region
    if region is None:
        return
    begin_row, end_row = owned
    places = {view.base: (planner.layouts[view.base], planner.local.get(view.base, -1)) for view in views}
    if end_row <= begin_row or any(local < 0 for _, local in places.values()):
        planner.region = None
        return
    region.steps.append(Step(planner.position, instruction, views, rows, begin_row, end_row, planner.ops[-1], places))
    if views[0].base not in planner.temporaries:
        planner.region = None
        planner.pending = region


def after(planner: Planner, position: int, instruction: Instruction) -> None:
    """The instruction at ``position`` is planned: its operations learn their instruction, and a
    region it did not continue (or, ended, did not follow with an exchange) stays whole: what
    follows would run apart from it, in another node-engine batch (heat's reduction of the sweep
    ran instruction by instruction: 0.69-0.80 s against 0.37-0.39 s whole, at 2 ranks over 100
    Mbit/s)."""
    for op in planner.ops[planner.stamped :]:
        if op.instructions and not op.positions:
            op.positions = (position,) * len(op.instructions)
    planner.stamped = len(planner.ops)
    if instruction.op == "release":
        return
    region = planner.region
    if region is not None and (not region.steps or region.steps[-1].position != position):
        planner.region = None
    pending = planner.pending
    if pending is not None and pending.steps[-1].position != position:
        planner.pending = None


def finish(planner: Planner) -> None:
    """The batch's instructions are planned: a region that ended last is split."""
    if planner.pending is not None:
        _split(planner, planner.pending)
    planner.region = planner.pending = None


# ---------------------------------------------------------------------- splitting a region


def _split(planner: Planner, region: Region) -> None:
    """Replace the region's computations by its interior and its edges, if it has the form."""
    steps = region.steps
    made = _temporaries(planner, steps)
    interior = None if made is None else _interior(region, made)
    if made is None or interior is None:
        return
    first, last = interior
    pieces = [(low, high) for low, high in ((steps[-1].begin, first), (last, steps[-1].end)) if high > low]
    snapshots = _snapshots(planner, steps, pieces)
    if snapshots is None:
        return
    early, edges = Chain(), Chain()
    for snapshot in snapshots:
        if snapshot is not None:
            snapshot.copy(planner, early, own=True, position=steps[0].position)
            snapshot.copy(planner, edges, own=False, position=steps[0].position)
    early.steps(planner, steps, interior, made, None)
    for piece, snapshot in zip(pieces, snapshots):
        edges.steps(planner, steps, piece, made, snapshot)
    replaced = {id(step.op) for step in steps}
    locals_made = {step.places[step.views[0].base][1] for step in steps[:-1]}
    rest = [op for op in planner.ops[region.start :] if id(op) not in replaced and not _releases(op, locals_made)]
    messages = [op for op in rest if op.kind != "compute"]
    copies = [op for op in rest if op.kind == "compute" and op.needs]  # the halo rows that arrived
    releases = [op for op in rest if op.kind == "compute" and not op.needs]  # of bases the edges may read
    planner.ops[region.start :] = [*messages, early.op(planner), *copies, edges.op(planner), *releases]
    planner.stamped = len(planner.ops)
    planner.unused.update(base for base in made if base in planner.local)  # never computed: not to be released
    for local in locals_made:  # nor declared
        planner._undeclared.pop(local, None)


def _releases(op: Op, bases: set[int]) -> bool:
    """Whether ``op`` only releases one of the local ``bases``."""
    return len(op.instructions) == 1 and op.instructions[0].op == "release" and int(op.instructions[0].attr("base")) in bases


def _temporaries(planner: Planner, steps: list[Step]) -> set[int] | None:
    """The region's temporaries, if every step but the last writes a distinct one that only
    later steps read, each as written, and computes at least the last step's rows; else None."""
    if len(steps) < 2:
        return None
    written: dict[int, View] = {}
    last = steps[-1]
    for step in steps:
        out = step.views[0]
        if not step.begin <= last.begin < last.end <= step.end or out.shape[0] != last.views[0].shape[0]:
            return None
        if any(isinstance(operand, View) and operand.base in written and operand != written[operand.base] for operand in step.instruction.inputs):
            return None
        if step is last:
            break
        if out.base in written or out.base not in planner.temporaries or any(isinstance(view, View) and view.base == out.base for view in step.instruction.inputs):
            return None
        written[out.base] = out
    if last.views[0].base in written:
        return None
    for later in planner.later[last.position + 1 :]:
        if later.op != "release" and any(isinstance(view, View) and view.base in written for view in (*later.inputs, *later.outputs)):
            return None
    return set(written)


def _interior(region: Region, made: set[int]) -> tuple[int, int] | None:
    """The rows of the region's steps whose inputs were all current before the exchange, if
    they are some of its rows, not all."""
    steps = region.steps
    count = steps[-1].views[0].shape[0]
    first, last = steps[-1].begin, steps[-1].end
    for step in steps:
        for view, geometry in zip(step.views[1:], step.rows[1:]):
            if view.base in made:
                continue
            valid = region.valid.get(view.base)
            if valid is None:
                return None
            low, high = halo.rows_within(geometry, count, *valid)
            first, last = max(first, low), min(last, high)
    if last <= first or (first, last) == (steps[-1].begin, steps[-1].end):
        return None
    return first, last


class Chain:
    """Instructions gathered into one computation, with the memory they touch beyond the fresh
    bases they declare, and the instruction of the batch each computes."""

    def __init__(self) -> None:
        self.instructions: list[Instruction] = []
        self.positions: list[int] = []
        self.reads: list[Access] = []
        self.writes: list[Access] = []
        self.declares: list[BaseDecl] = []
        self.released: list[int] = []

    def add(self, instruction: Instruction, position: int, reads: list[Access], writes: list[Access]) -> None:
        self.instructions.append(instruction)
        self.positions.append(position)
        self.reads.extend(reads)
        self.writes.extend(writes)

    def steps(self, planner: Planner, steps: list[Step], rows: tuple[int, int], made: set[int], snapshot: Snapshot | None) -> None:
        """The region's steps over ``rows``, their temporaries fresh bases of those rows (reading
        the written array through ``snapshot``, if given)."""
        begin_row, end_row = rows
        fresh: dict[int, View] = {}
        for step in steps:
            instruction = step.instruction
            shape = step.views[0].shape
            box = ((begin_row, end_row), *((0, n) for n in shape[1:]))
            inputs: list[View | Const] = []
            reads: list[Access] = []
            for operand in instruction.inputs:
                if not isinstance(operand, View):
                    inputs.append(operand)
                elif operand.base in fresh:
                    inputs.append(fresh[operand.base])
                else:
                    part = sub_view(broadcast_to(operand, shape), box)
                    local = snapshot.view(part) if snapshot is not None and part.base == snapshot.base else step.local_view(part, planner.rank)
                    reads.append(access(local))
                    inputs.append(local)
            out = instruction.outputs[0]
            writes: list[Access] = []
            if out.base in made:
                local_out = fresh[out.base] = contiguous(planner._new_local(), out.dtype, (end_row - begin_row, *shape[1:]))
                self.declares.append(BaseDecl(local_out.base, out.dtype, math.prod(local_out.shape)))
                self.released.append(local_out.base)
            else:
                local_out = step.local_view(sub_view(out, box), planner.rank)
                writes.append(access(local_out))
            self.add(Instruction(instruction.op, (local_out,), tuple(inputs), instruction.attrs), step.position, reads, writes)
        if snapshot is not None:
            self.released.append(snapshot.local)

    def op(self, planner: Planner) -> Op:
        """The computation, releasing its fresh bases at its end."""
        released = [release_of(base) for base in self.released]
        op = planner.compute(self.instructions + released, reads=self.reads, writes=self.writes + [(base, 0, 1) for base in self.released], declares=self.declares)
        op.positions = (*self.positions, *(self.positions[-1] for _ in released))
        return op


@dataclass
class Snapshot:
    """A fresh local base holding bytes ``[low, high)`` of the written array's base (global
    numbering): its own bytes copied before the interior writes them, its halo bytes after the
    exchange brought them."""

    base: int
    local: int
    low: int
    high: int
    dtype: np.dtype

    def view(self, part: View) -> View:
        """``part`` (a view of the written array within the snapshot's bytes) as a view of it."""
        return View(self.local, part.dtype, part.offset - self.low, part.shape, part.strides)

    def copy(self, planner: Planner, chain: Chain, own: bool, position: int) -> None:
        """Copy the snapshot's ``own`` bytes (declaring it), or its halo bytes, from the array."""
        own_low, own_high = halo.owned_bytes(planner.layouts[self.base], planner.rank)
        item = self.dtype.itemsize
        if own:
            spans = [(max(self.low, own_low), min(self.high, own_high))]
            chain.declares.append(BaseDecl(self.local, self.dtype, (self.high - self.low) // item))
        else:
            spans = [(self.low, min(self.high, own_low)), (max(self.low, own_high), self.high)]
        for low, high in spans:
            if high > low:
                source = planner.local_view(View(self.base, self.dtype, low, ((high - low) // item,), (item,)))
                target = View(self.local, self.dtype, low - self.low, source.shape, (item,))
                chain.add(Instruction("copy", (target,), (source,)), position, [access(source)], [access(target)])


def _snapshots(planner: Planner, steps: list[Step], pieces: list[tuple[int, int]]) -> list[Snapshot | None] | None:
    """Per piece of edge rows, the snapshot of the written array they read (None: they read
    none of it); None if the region reads it in another dtype or a piece beyond this rank's bytes."""
    written = steps[-1].views[0].base
    dtype = planner.decls[written].dtype
    if any(view.base == written and view.dtype != dtype for step in steps for view in step.views[1:]):
        return None
    local_low, local_high = halo.local_bytes(planner.layouts[written], planner.rank)
    spans: list[tuple[int, int] | None] = []
    for piece in pieces:
        reads = [halo.read_bytes(geometry, *piece) for step in steps for view, geometry in zip(step.views[1:], step.rows[1:]) if view.base == written]
        if not reads:
            spans.append(None)
            continue
        low, high = min(low for low, _ in reads), max(high for _, high in reads)
        if low % dtype.itemsize or high % dtype.itemsize or low < local_low or high > local_high:
            return None
        spans.append((low, high))
    return [None if span is None else Snapshot(written, planner._new_local(), *span, dtype) for span in spans]

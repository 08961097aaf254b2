"""Planning a batch: fusion groups, whole-view operations and releases, in program order.

Consecutive element-wise instructions over the same iteration shape join one *fusion group*
(one kernel per view-block) as long as running them element by element gives the same result
as running them one at a time: every base that the group writes must be accessed through the
same element mapping everywhere in the group, or through byte ranges that do not overlap. A
full reduction joins the group too (its result is written when all view-blocks are done, so
nothing later in the group may touch it). So does a reduction along some axes whose input
keeps its last axis and one more (see ``reduction_order``): the group then iterates its shape
with the reduced axes moved inside the kept ones, and each view-block accumulates whole output
elements; every axis reduction of a group reduces the same axes. Everything else runs as a
*whole-view* operation through the opcode's reference implementation. A small instruction that
cannot join the group but touches nothing the group writes (say, dividing a reduction's result
by a count) is *postponed* until the group closes instead of closing it; so is one of any size
that reads an axis reduction's result (it has to wait for the group anyway), and a group with
axis reductions has what it postponed planned again after it, where it may fuse. A group holds
at most ``MAX_GROUP_STEPS`` instructions; a longer run is cut where the fewest bytes are live
(``shoal.engine.node.plan.group_cuts``), so that a loop's iterations are cut alike.

A base that the batch declares, writes and reads only inside one group (always through the
same mapping) and releases is a *temporary*: it lives per element (compiled) or per tile
(NumPy) and is never allocated in full. One that the batch does not release may still live
that way if the group copies all of it into another base's view, which then holds its contents
(an *alias*, ``shoal.engine.node.plan.aliases``).
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field, replace

from shoal.bytecode import BaseDecl, Batch, Instruction, View
from shoal.engine.blocks.geometry import broadcast_strides, view_extent
from shoal.engine.node.plan.aliases import find_aliases
from shoal.engine.node.plan.copy_chain import CopyChain, scratch_bases, take_copy_chain
from shoal.engine.node.plan.fusible import (
    FUSIBLE_REDUCTIONS,
    fusible_shape,
    reduced_axes,
)
from shoal.engine.node.plan.group_cuts import cut_points
from shoal.engine.node.plan.row_gather import RowView, row_copy

MAX_GROUP_STEPS = 64
POSTPONE_ELEMENTS = 4096  # instructions this small (and 1/16 of the group) may wait for it to close


@dataclass(frozen=True, slots=True)
class Access:
    """How one instruction touches a base over a group's iteration shape."""

    base: int
    key: tuple  # (dtype, offset, strides): the element mapping
    low: int
    high: int
    write: bool
    deferred: bool = False


@dataclass
class Group:
    """Instructions fused into one kernel per view-block, over iteration ``shape``."""

    shape: tuple[int, ...]
    instructions: list[Instruction] = field(default_factory=list)
    accesses: dict[int, list[Access]] = field(default_factory=dict)
    reductions: list[Instruction] = field(default_factory=list)  # full reductions
    axis_reductions: list[Instruction] = field(default_factory=list)
    reduced_axes: tuple[int, ...] | None = None  # what every axis reduction of the group reduces
    deferred: dict[int, tuple] = field(default_factory=dict)  # base -> mapping key of its deferred write
    postponed: list[Instruction] = field(default_factory=list)
    reads_rows: bool = False  # an instruction reads a RowView (a fused gather)
    origins: list[Instruction] = field(default_factory=list)  # the batch's instructions, as recorded
    written: set[int] = field(default_factory=set)  # bases the group writes
    postponed_writes: set[int] = field(default_factory=set)  # bases postponed instructions write
    postponed_reads: set[int] = field(default_factory=set)  # ... and read
    results: set[int] = field(default_factory=set)  # bases reductions of the group write
    axis_results: set[int] = field(default_factory=set)  # ... axis reductions among them

    def replans(self) -> bool:
        """True if what the group postponed is planned again after it (and may fuse) rather than
        run as whole-view operations: groups with axis reductions postpone large instructions."""
        return bool(self.postponed and self.axis_reductions)

    def add(self, instruction: Instruction, original: Instruction, accesses: list[Access]) -> None:
        """Join ``instruction`` (``original`` as recorded) with its ``accesses``."""
        self.instructions.append(instruction)
        self.origins.append(original)
        for access in accesses:
            known = self.accesses.setdefault(access.base, [])
            if access not in known:  # a repeated access adds no constraint (in-place loops)
                known.append(access)
            if access.write:
                self.written.add(access.base)
            if access.deferred:
                self.deferred[access.base] = access.key

    def postpone(self, instruction: Instruction) -> None:
        """Run ``instruction`` after the group: it may then no longer touch what this writes, nor
        write what this reads."""
        self.postponed.append(instruction)
        self.postponed_writes.update(out.base for out in instruction.outputs)
        self.postponed_reads.update(view.base for view in instruction.inputs if isinstance(view, View))


@dataclass(frozen=True)
class WholeOp:
    """An instruction that runs over whole views after everything it depends on."""

    instruction: Instruction


@dataclass(frozen=True)
class Release:
    """The end of a base's life."""

    base: int


Step = Group | WholeOp | CopyChain | Release


@dataclass
class Plan:
    """A batch as steps in program order, the bases that never need memory, and the ones among
    them whose contents another base's view holds once the batch is done."""

    steps: list[Step]
    temporaries: set[int]
    aliases: dict[int, View] = field(default_factory=dict)  # see shoal.engine.node.plan.aliases


def plan_batch(batch: Batch, known: dict[int, BaseDecl]) -> Plan:
    """Group ``batch``'s instructions; ``known`` describes every live base (new ones included).

    A run of fusible instructions longer than ``MAX_GROUP_STEPS`` is found whole first, then
    planned again cut where cutting costs least (``group_cuts``), so that a loop's iterations
    are cut alike and share their kernels."""
    memo: dict[int, tuple[Instruction, tuple[int, ...] | None, list[Access] | None]] = {}
    steps = _grouped(batch, None, set(), memo)
    runs = [(k, step) for k, step in enumerate(steps) if isinstance(step, Group) and len(step.instructions) > MAX_GROUP_STEPS]
    if runs:
        cuts: set[int] = set()
        for position, run in runs:
            points = cut_points(run.instructions, MAX_GROUP_STEPS, _outliving(steps, position))
            cuts.update(id(run.origins[point]) for point in points)
        steps = _grouped(batch, MAX_GROUP_STEPS, cuts, memo)
    declared = {decl.id for decl in batch.bases} - set(batch.data)
    released = {step.base for step in steps if isinstance(step, Release)}
    temporaries = _temporaries(steps, declared, known)
    lasting = temporaries - released
    groups = [(position, step.instructions, set(step.accesses)) for position, step in enumerate(steps) if isinstance(step, Group)]
    aliases = find_aliases(groups, [_changes(step) for step in steps], lasting, known)
    return Plan(steps, (temporaries & released) | set(aliases), aliases)


def _grouped(batch: Batch, limit: int | None, cuts: set[int], memo: dict[int, tuple[Instruction, tuple[int, ...] | None, list[Access] | None]]) -> list[Step]:
    """``batch`` as steps: groups of at most ``limit`` instructions (None: no limit), a group
    also closed before an instruction whose ``id`` is in ``cuts`` (a set this consumes).
    ``memo`` keeps each instruction's fusible shape and accesses for a second pass (by ``id``,
    with the instruction itself, so that an id is never taken for another object's)."""
    steps: list[Step] = []
    pending_releases: list[Release] = []
    current: Group | None = None
    queue: deque[Instruction | Release] = deque(batch.instructions)
    scratch_ids = scratch_bases(batch)
    written = {out.base for instruction in batch.instructions for out in instruction.outputs}

    def close() -> None:
        """End the open group; what it postponed is planned next, then the releases it held."""
        nonlocal current
        if current is not None:
            steps.append(current)
            if current.replans():
                queue.extendleft(reversed([*current.postponed, *pending_releases]))
                pending_releases.clear()
            else:
                steps.extend(WholeOp(instruction) for instruction in current.postponed)
            current = None
        steps.extend(pending_releases)
        pending_releases.clear()

    while queue or (current is not None and current.replans()):
        if not queue:
            close()
            continue
        instruction = queue.popleft()
        if isinstance(instruction, Release) or instruction.op == "release":
            release = instruction if isinstance(instruction, Release) else Release(instruction.attr("base"))
            if current is None or not _uses(current, release.base):
                steps.append(release)  # now: its memory can serve the open group's new bases
            else:
                pending_releases.append(release)
            continue
        if current is not None and id(instruction) in cuts:
            cuts.discard(id(instruction))
            queue.appendleft(instruction)  # after what the closed group postponed, if replanned
            close()
            continue
        chain = take_copy_chain(instruction, queue, scratch_ids) if instruction.op == "copy" else None
        if chain is not None:
            close()
            steps.append(chain)
            continue
        original = instruction  # what runs if it does not fuse (a gather stays a gather)
        if instruction.op == "gather":
            instruction = row_copy(batch, instruction, written) or instruction
        known = memo.get(id(original))
        if known is not None and known[0] is original:
            shape, accesses = known[1], known[2]
        else:
            shape = fusible_shape(instruction)
            accesses = None if shape is None else _accesses(instruction, shape)
            memo[id(original)] = (original, shape, accesses)
        joined = None
        if accesses is not None and current is not None and current.shape == shape and _same_axes(current, instruction):
            joined = _without_deferral(current, instruction, _join(current, accesses))
        if joined is None and current is not None and _postponable(current, instruction):
            current.postpone(original)
            continue
        if joined is None and current is not None and current.replans():
            queue.appendleft(original)  # after what the group postponed
            close()
            continue
        if joined is None:
            close()
            joined = None if accesses is None else _join(None, accesses)
        if joined is None or shape is None:
            steps.append(WholeOp(original))
            continue
        if current is None:
            current = Group(shape)
        current.add(instruction, original, joined)
        current.reads_rows = current.reads_rows or _reads_rows(instruction)
        axes = reduced_axes(instruction)
        if axes is not None:
            current.axis_reductions.append(instruction)
            current.reduced_axes = axes
            current.axis_results.add(instruction.outputs[0].base)
        elif instruction.op in FUSIBLE_REDUCTIONS:
            current.reductions.append(instruction)
        if instruction.op in FUSIBLE_REDUCTIONS:
            current.results.add(instruction.outputs[0].base)
        if limit is not None and len(current.instructions) >= limit:
            close()
    close()
    return steps


def _outliving(steps: list[Step], position: int) -> set[int]:
    """The bases that steps after ``position`` use, and those the batch does not release."""
    released = {step.base for step in steps if isinstance(step, Release)}
    used = _bases(steps[position])
    later = {base for step in steps[position + 1 :] for base in _bases(step)}
    return later | (used - released)


def _instructions(step: Group | WholeOp | CopyChain) -> list[Instruction] | tuple[Instruction, ...]:
    return (step.instruction,) if isinstance(step, WholeOp) else step.instructions


def _bases(step: Step) -> set[int]:
    """The bases ``step`` reads or writes (a release: none)."""
    if isinstance(step, Release):
        return set()
    return {view.base for i in _instructions(step) for view in (*i.outputs, *i.inputs) if isinstance(view, View)}


def _changes(step: Step) -> set[int]:
    """The bases that ``step`` writes or releases."""
    if isinstance(step, Release):
        return {step.base}
    return {out.base for instruction in _instructions(step) for out in instruction.outputs}


def _same_axes(group: Group, instruction: Instruction) -> bool:
    axes = reduced_axes(instruction)
    return axes is None or group.reduced_axes is None or group.reduced_axes == axes


def _without_deferral(group: Group, instruction: Instruction, joined: list[Access] | None) -> list[Access] | None:
    """``joined`` unless it would put two of a deferred write, an axis reduction and a row view
    in one group: a deferred write's neighbouring view-blocks are rows of the group's first
    axis, which the order of an axis reduction moves, and a row view needs view-blocks of one
    index of the first axis, in its place."""
    if joined is None:
        return None
    deferring = bool(group.deferred) or any(access.deferred for access in joined)
    reducing = bool(group.axis_reductions) or reduced_axes(instruction) is not None
    rows = group.reads_rows or _reads_rows(instruction)
    return None if deferring + reducing + rows > 1 else joined


def _reads_rows(instruction: Instruction) -> bool:
    return any(isinstance(operand, RowView) for operand in instruction.inputs)


def _accesses(instruction: Instruction, shape: tuple[int, ...]) -> list[Access] | None:
    """How ``instruction`` touches its bases over ``shape``; None if a view does not broadcast."""
    accesses: list[Access] = []
    views: list[tuple[View, bool]] = [(view, False) for view in instruction.inputs if isinstance(view, View)]
    if instruction.op not in FUSIBLE_REDUCTIONS:
        views += [(view, True) for view in instruction.outputs]
    else:  # the result appears only at the end: any other access to it in the group conflicts
        out = instruction.outputs[0]
        low, high = view_extent(out)
        accesses.append(Access(out.base, ("reduction", id(instruction)), low, high, True))
    for view, write in views:
        try:
            strides = broadcast_strides(view, shape)
        except ValueError:
            return None
        if isinstance(view, RowView):
            low, high = view.source_extent
            accesses.append(Access(view.base, ("rows", view.dtype, view.offset, strides, view.rows), low, high, write))
            continue
        low, high = view_extent(view)
        accesses.append(Access(view.base, (view.dtype, view.offset, strides), low, high, write))
    return accesses


def _join(group: Group | None, new: list[Access]) -> list[Access] | None:
    """``new`` as it joins ``group`` (None: a group of its own), or None if it cannot.

    Every write must meet other accesses of its base only through the same mapping or disjoint
    bytes, unless it can be deferred: the group has not written the base yet and every
    overlapping access is a read with the write's dtype and strides.
    """
    if group is not None:
        if any(a.base in group.deferred or a.base in group.postponed_writes for a in new):
            return None
        if any(a.write and a.base in group.postponed_reads for a in new):
            return None
    if _one_mapping_per_base(group, new):
        return list(new)  # nothing can clash: every clash needs two mappings of one base
    existing = [] if group is None else [a for base in {a.base for a in new} for a in group.accesses.get(base, ())]
    everything = [*existing, *new]
    joined = list(new)
    for position, write in enumerate(new):
        if not write.write or write.key[0] == "reduction":
            continue
        clashes = [b for b in everything if b is not write and _clash(write, b)]
        if clashes and _deferrable(write, clashes, everything):
            joined[position] = replace(write, deferred=True)
    deferred = {id(new[i]) for i, a in enumerate(joined) if a.deferred}
    for a in new:
        for b in everything:
            if b is not a and _clash(a, b) and id(a) not in deferred and id(b) not in deferred:
                return None
    return joined


def _one_mapping_per_base(group: Group | None, new: list[Access]) -> bool:
    """True if every base ``new`` touches is touched through one mapping, in ``new`` and in
    ``group``: the common case of a loop body (fresh results, inputs read alike), which then
    joins without comparing every pair of accesses."""
    keys: dict[int, tuple] = {}
    known = {} if group is None else group.accesses
    for access in new:
        key = keys.setdefault(access.base, access.key)
        if key != access.key:
            return False
        for other in known.get(access.base, ()):
            if other.key != key:
                return False
    return True


def _clash(a: Access, b: Access) -> bool:
    """True if ``a`` and ``b`` may touch the same bytes through different mappings, one writing."""
    return a.base == b.base and (a.write or b.write) and a.key != b.key and a.low < b.high and b.low < a.high


def _deferrable(write: Access, clashes: list[Access], everything: list[Access]) -> bool:
    if any(b.write for b in clashes):
        return False
    if any(b.write and b is not write and b.base == write.base for b in everything):
        return False
    dtype, _, strides = write.key
    return all(b.key[0] == dtype and b.key[2] == strides for b in clashes)


def _uses(group: Group, base: int) -> bool:
    return base in group.accesses or base in group.postponed_writes or base in group.postponed_reads


def _postponable(group: Group, instruction: Instruction) -> bool:
    """True if ``instruction`` may run after ``group`` without changing results: it is small, or
    it reads the result of one of the group's axis reductions (so it has to wait for the whole
    group anyway; ``ux = np.sum(f * cx, axis=0) / rho`` then lets the next sum join the group)."""
    size = sum(math.prod(out.shape) for out in instruction.outputs)
    reads = {operand.base for operand in instruction.inputs if isinstance(operand, View)}
    waits = not reads.isdisjoint(group.axis_results)
    if size > (math.prod(group.shape) if waits else min(POSTPONE_ELEMENTS, math.prod(group.shape) // 16)):
        return False
    for out in instruction.outputs:
        if out.base in group.accesses:
            return False
    return all(base not in group.written or base in group.results for base in reads)


def _temporaries(steps: list[Step], candidates: set[int], known: dict[int, BaseDecl]) -> set[int]:
    """Candidates accessed in exactly one group, always through one mapping, written first."""
    seen_in: dict[int, Group | None] = {}
    keys: dict[int, set] = {}
    first_is_write: dict[int, bool] = {}
    for step in steps:
        if isinstance(step, Release):
            continue
        if isinstance(step, (WholeOp, CopyChain)):
            for view in (view for i in _instructions(step) for view in (*i.outputs, *i.inputs)):
                if isinstance(view, View) and view.base in candidates:
                    seen_in[view.base] = None
            continue
        for instruction in step.instructions:
            # By position: an in-place instruction may name one View object as input and output.
            ordered = [(v, False) for v in instruction.inputs if isinstance(v, View)] + [(v, True) for v in instruction.outputs]
            for view, is_output in ordered:
                if view.base not in candidates:
                    continue
                if isinstance(view, RowView):
                    seen_in[view.base] = None
                    continue
                if is_output and instruction.op in FUSIBLE_REDUCTIONS:
                    seen_in[view.base] = None
                    continue
                if view.base in seen_in and seen_in[view.base] is not step:
                    seen_in[view.base] = None
                    continue
                seen_in.setdefault(view.base, step)
                first_is_write.setdefault(view.base, is_output)
                keys.setdefault(view.base, set()).add((view.dtype, view.offset, broadcast_strides(view, step.shape), view.shape == step.shape))
    temporaries = set()
    for base, group in seen_in.items():
        if group is None or not first_is_write.get(base) or len(keys[base]) != 1:
            continue
        dtype, _, _, full = next(iter(keys[base]))
        if full and dtype == known[base].dtype and math.prod(group.shape) > 0:
            temporaries.add(base)
    return temporaries

"""Rolls of one array read from a single padded copy of it, so a stencil written with
``np.roll`` becomes views of one base that the engine fuses.

``np.roll`` of a lazy array records copies of up to four boxes of the source into a new base
(``shoal.numpy._shape.roll``). Game of life's ``sum(np.roll(np.roll(grid, i, 0), j, 1) ...)``
makes eight such bases a generation, and roll of a roll copies twice: each neighbour is two
full passes over memory, and every later operation reads a different base, so nothing fuses.

At a flush, a base of the batch that holds a cyclic shift of another (a *rolled* base: without
data from the batch, written only by same-shape copies whose target boxes tile it and whose
source boxes sit in one source base of the same full shape at one shift modulo each extent,
read only whole afterwards, released in the batch) is replaced, where at least two rolls of one
source meet in the batch, by a view of one *padded* base: the source with a margin on either
side of every rolled axis filled cyclically (one copy of the interior, one per margin box). A
roll of a rolled base is a roll of its source by the summed shift. The rolled bases' copies,
declarations and releases leave the batch (the release stays for one an earlier batch declared:
a flush between ``np.roll``'s new array and its copies); their readers read the padded base's
views (each has the rolled base's shape, so the engine plans them as the stencil they are).

Only what cannot change a value qualifies: the padded base is filled where the first of those
copies ran and is never written; no instruction writes or releases the source between the
first and the last of them; every dtype is the source's (copies cast nothing, so no warning
moves); a margin is at most a quarter of its axis.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import product

import numpy as np

from shoal.bytecode import BaseDecl, Batch, Instruction, View, contiguous_strides
from shoal.frozen_values import new_instruction

MAX_COPIES = 16  # copies into one rolled base (a roll along d axes makes up to 2^d)
MARGIN_SHARE = 4  # a margin is at most 1/MARGIN_SHARE of its axis


@dataclass
class _Rolled:
    """A base of the batch that may hold a cyclic shift of ``source``."""

    base: int
    declared: bool  # by this batch (else by an earlier one, and its release stays)
    copies: list[int] = field(default_factory=list)  # positions of the copies into it
    shape: tuple[int, ...] | None = None  # its full shape, from its whole reads
    source: int | None = None  # the base its copies read
    shift: tuple[int, ...] | None = None
    reads: list[int] = field(default_factory=list)  # positions of the instructions reading it
    release: int | None = None
    inner: int | None = None  # the rolled base its copies read, for a roll of a roll
    good: bool = True


def padded_rolls(batch: Batch, new_id: Callable[[], int]) -> tuple[Batch, dict[int, int]]:
    """``batch`` with its rolled bases read from padded copies of their sources, and the new
    position of every instruction kept (``batch`` itself and ``{}`` where nothing changes).
    ``new_id`` gives the id of each padded base."""
    possible = _copied_and_released(batch)
    if len(possible) < 2:
        return batch, {}
    rolled = _rolled_bases(batch, possible, {decl.id for decl in batch.bases})
    if len(rolled) < 2:
        return batch, {}
    _resolve(rolled, batch)
    groups: dict[int, list[_Rolled]] = {}
    for candidate in rolled.values():
        if candidate.good:  # resolved: its source and shift are known
            groups.setdefault(candidate.source, []).append(candidate)
    plans = [plan for source, members in groups.items() if len(members) >= 2 and (plan := _padding(source, members, batch)) is not None]
    if not plans:
        return batch, {}
    return _rewritten(batch, plans, new_id)


def _copied_and_released(batch: Batch) -> set[int]:
    """The bases ``batch`` copies into and releases, without data it brings: one quick pass
    that leaves most batches (no two such bases) alone. A base may have been declared by an
    earlier batch (a flush between ``np.roll``'s new array and its copies)."""
    copied: set[int] = set()
    released: set[int] = set()
    for instruction in batch.instructions:
        op = instruction.op
        if op == "copy":
            copied.add(instruction.outputs[0].base)
        elif op == "release":
            released.add(instruction.attr("base"))
    possible = copied & released
    if len(possible) < 2:
        return set()
    return possible - set(batch.data)


def _rolled_bases(batch: Batch, possible: set[int], declared: set[int]) -> dict[int, _Rolled]:
    """The bases of ``possible`` that may be rolled, with their copies, reads and release (not
    yet resolved); ``declared``: the bases the batch declares."""
    found: dict[int, _Rolled] = {}

    def entry(base: int) -> _Rolled | None:
        if base not in possible:
            return None
        candidate = found.get(base)
        if candidate is None:
            candidate = found[base] = _Rolled(base, base in declared)
        return candidate

    for position, instruction in enumerate(batch.instructions):
        if instruction.op == "release":
            candidate = found.get(instruction.attr("base"))
            if candidate is not None:
                candidate.release = position
            continue
        for view in instruction.outputs:
            candidate = entry(view.base)
            if candidate is None:
                continue
            if instruction.op != "copy" or candidate.reads or len(candidate.copies) >= MAX_COPIES:
                candidate.good = False
            else:
                candidate.copies.append(position)
        for value in instruction.inputs:
            if isinstance(value, View):
                candidate = entry(value.base)
                if candidate is not None and (not candidate.reads or candidate.reads[-1] != position):
                    candidate.reads.append(position)
    return {base: candidate for base, candidate in found.items() if candidate.good and candidate.copies and candidate.reads and candidate.release is not None}


def _resolve(rolled: dict[int, _Rolled], batch: Batch) -> None:
    """Find each candidate's full shape, source and shift; a roll of a rolled base becomes a roll
    of its source (the inner one then keeps only those copies as readers)."""
    decls = {decl.id: decl for decl in batch.bases}
    instructions = batch.instructions
    in_order = sorted(rolled.values(), key=lambda c: c.copies[0])
    for candidate in reversed(in_order):  # an outer roll gives its shape to the inner one it reads
        candidate.shape = _whole_shape(candidate, instructions, decls.get(candidate.base), rolled)
        if candidate.shape is None:
            candidate.good = False
    for candidate in in_order:
        if not candidate.good:
            continue
        shift = _shift(candidate, instructions, decls)
        if shift is None:
            candidate.good = False
            continue
        source, offsets = shift
        inner = rolled.get(source)
        if inner is not None and inner.good:  # else it is a source like any other base
            if inner.shape != candidate.shape or any(p < inner.copies[-1] for p in candidate.copies):
                candidate.good = False
                continue
            candidate.inner = inner.base
            source = inner.source
            offsets = tuple((a + b) % n for a, b, n in zip(offsets, inner.shift, candidate.shape))
        candidate.source, candidate.shift = source, offsets
    changed = True
    while changed:  # an inner roll read by anything but good outer copies stays, and so do they
        changed = False
        good_copies = {p for candidate in in_order if candidate.good for p in candidate.copies}
        for candidate in in_order:
            if not candidate.good:
                continue
            inner = rolled.get(candidate.inner) if candidate.inner is not None else None
            boxed = [p for p in candidate.reads if instructions[p].op == "copy" and instructions[p].outputs[0].base in rolled]
            if (inner is not None and not inner.good) or any(p not in good_copies for p in boxed):
                candidate.good = False
                changed = True


def _whole_shape(candidate: _Rolled, instructions: list[Instruction], decl: BaseDecl | None, rolled: dict[int, _Rolled]) -> tuple[int, ...] | None:
    """The full shape the candidate's readers see it in: every read is of the whole base (of
    all of it, where the batch declares it), C order, one shape and the copies' dtype (a copy
    into another candidate may read a box of it instead)."""
    dtype = instructions[candidate.copies[0]].outputs[0].dtype
    if decl is not None and decl.dtype != dtype:
        return None
    shape = None
    for position in candidate.reads:
        instruction = instructions[position]
        for value in instruction.inputs:
            if not isinstance(value, View) or value.base != candidate.base:
                continue
            if instruction.op == "copy" and instruction.outputs[0].base in rolled:
                continue  # a box of it, for a roll of this roll: checked with the outer one
            if value.offset != 0 or (decl is not None and value.size != decl.size) or value.dtype != dtype or not value.is_contiguous():
                return None
            if shape is not None and value.shape != shape:
                return None
            shape = value.shape
    if shape is None:  # read only by outer rolls: they give its shape
        outer = [instructions[position].outputs[0].base for position in candidate.reads]
        shapes = {rolled[base].shape for base in outer if base in rolled and rolled[base].shape is not None}
        shape = shapes.pop() if len(shapes) == 1 else None
    if shape is None or (decl is not None and math.prod(shape) != decl.size) or 0 in shape:
        return None
    return shape


def _box(view: View, shape: tuple[int, ...]) -> tuple[int, ...] | None:
    """The origin of ``view`` as a box of a C-ordered array of ``shape`` holding its base from
    byte 0, or None if it is no such box."""
    if view.ndim != len(shape):
        return None
    strides = contiguous_strides(shape, view.dtype.itemsize)
    offset = view.offset
    origin = []
    for axis, stride in enumerate(strides):
        start, offset = divmod(offset, stride)
        if view.shape[axis] > 1 and view.strides[axis] != stride:
            return None
        if start + view.shape[axis] > shape[axis]:
            return None
        origin.append(start)
    return tuple(origin) if offset == 0 else None


def _shift(candidate: _Rolled, instructions: list[Instruction], decls: dict[int, BaseDecl]) -> tuple[int, tuple[int, ...]] | None:
    """(source base, shift per axis) if the candidate's copies tile it with boxes of one source
    of its full shape at one cyclic shift."""
    shape = candidate.shape
    dtype = instructions[candidate.copies[0]].outputs[0].dtype
    source = shift = None
    boxes = []
    for position in candidate.copies:
        instruction = instructions[position]
        target, value = instruction.outputs[0], instruction.inputs[0]
        if not isinstance(value, View) or value.shape != target.shape or value.dtype != dtype or target.dtype != dtype:
            return None
        if source is None:
            source = value.base
        if value.base != source or value.base == candidate.base:
            return None
        to, of = _box(target, shape), _box(value, shape)
        if to is None or of is None:
            return None
        moved = tuple((t - s) % n for t, s, n in zip(to, of, shape))
        if shift is not None and moved != shift:
            return None
        shift = moved
        boxes.append((to, target.shape))
    source_decl = decls.get(source)
    if source_decl is not None and (source_decl.dtype != dtype or source_decl.size != math.prod(shape)):
        return None
    if sum(math.prod(extent) for _, extent in boxes) != math.prod(shape) or _overlapping(boxes):
        return None
    return source, shift


def _overlapping(boxes: list[tuple[tuple[int, ...], tuple[int, ...]]]) -> bool:
    for k, (a, ea) in enumerate(boxes):
        for b, eb in boxes[k + 1 :]:
            if all(x < y + m and y < x + n for x, n, y, m in zip(a, ea, b, eb)):
                return True
    return False


@dataclass
class _Padding:
    """One padded base: its source, margins, and the rolled bases it serves."""

    source: int
    shape: tuple[int, ...]
    low: tuple[int, ...]
    high: tuple[int, ...]
    members: list[_Rolled]  # an inner roll read only by others' copies among them
    fill_at: int  # position of the first copy it replaces


def _signed(shift: int, extent: int) -> int:
    return shift if shift <= extent // 2 else shift - extent


def _padding(source: int, members: list[_Rolled], batch: Batch) -> _Padding | None:
    shape = members[0].shape
    if any(member.shape != shape for member in members):
        return None
    low = tuple(max(0, *(_signed(m.shift[a], n) for m in members)) for a, n in enumerate(shape))
    high = tuple(max(0, *(-_signed(m.shift[a], n) for m in members)) for a, n in enumerate(shape))
    if any((lo + hi) * MARGIN_SHARE > n for lo, hi, n in zip(low, high, shape)):
        return None
    copies = sorted(p for member in members for p in member.copies)
    first, last = copies[0], copies[-1]
    for position in range(first, last + 1):  # the source keeps its values over every copy
        instruction = batch.instructions[position]
        if instruction.op == "release" and instruction.attr("base") == source:
            return None
        if any(view.base == source for view in instruction.outputs):
            return None
    return _Padding(source, shape, low, high, members, first)


def _rewritten(batch: Batch, plans: list[_Padding], new_id: Callable[[], int]) -> tuple[Batch, dict[int, int]]:
    removed: set[int] = set()
    inserted: dict[int, list[Instruction]] = {}
    appended_after: dict[int, list[Instruction]] = {}
    replaced: dict[int, View] = {}  # rolled base -> the padded base's view
    bases = list(batch.bases)
    gone: set[int] = set()
    for plan in plans:
        dtype = batch.instructions[plan.members[0].copies[0]].outputs[0].dtype
        padded_shape = tuple(lo + n + hi for lo, n, hi in zip(plan.low, plan.shape, plan.high))
        padded = new_id()
        bases.append(BaseDecl(padded, dtype, math.prod(padded_shape)))
        strides = contiguous_strides(padded_shape, dtype.itemsize)
        inserted.setdefault(plan.fill_at, []).extend(_fill(padded, strides, plan, dtype))
        for member in plan.members:
            offset = sum((lo - _signed(s, n)) * stride for lo, s, n, stride in zip(plan.low, member.shift, plan.shape, strides))
            replaced[member.base] = View(padded, dtype, offset, plan.shape, strides)
        last_release = max(member.release for member in plan.members)
        appended_after.setdefault(last_release, []).append(new_instruction("release", (), (), (("base", padded),)))
        for candidate in plan.members:
            removed.update(candidate.copies)
            if candidate.declared:  # one an earlier batch declared keeps its release
                removed.add(candidate.release)
                gone.add(candidate.base)
    order: list[Instruction] = []
    moved: dict[int, int] = {}
    for position, instruction in enumerate(batch.instructions):
        order.extend(inserted.get(position, ()))
        if position not in removed:
            if any(isinstance(value, View) and value.base in replaced for value in instruction.inputs):
                inputs = tuple(replaced.get(value.base, value) if isinstance(value, View) else value for value in instruction.inputs)
                instruction = Instruction(instruction.op, instruction.outputs, inputs, instruction.attrs)
            moved[position] = len(order)
            order.append(instruction)
        order.extend(appended_after.get(position, ()))
    result = Batch(bases=[decl for decl in bases if decl.id not in gone], data=batch.data, instructions=order, donated=batch.donated)
    if batch.repeats is not None:
        result.repeats = None  # a hint only; verification then checks every instruction
    return result, moved


def _fill(padded: int, padded_strides: tuple[int, ...], plan: _Padding, dtype: np.dtype) -> list[Instruction]:
    """Copies that fill the padded base (C order, ``padded_strides``): the source in the middle,
    each margin box from the source's far side."""
    shape = plan.shape
    source_strides = contiguous_strides(shape, dtype.itemsize)
    copies = []
    choices = []
    for lo, n, hi in zip(plan.low, shape, plan.high):
        parts = [(lo, 0, n)]  # (start in the padded axis, start in the source, extent)
        if lo:
            parts.append((0, n - lo, lo))
        if hi:
            parts.append((lo + n, 0, hi))
        choices.append(parts)
    for combination in product(*choices):
        extent = tuple(part[2] for part in combination)
        target = View(padded, dtype, sum(p[0] * s for p, s in zip(combination, padded_strides)), extent, padded_strides)
        source = View(plan.source, dtype, sum(p[1] * s for p, s in zip(combination, source_strides)), extent, source_strides)
        copies.append(Instruction("copy", (target,), (source,)))
    return copies[1:] + copies[:1]  # the interior last: it then never joins the fused run before it

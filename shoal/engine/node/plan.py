"""Planning a batch: fusion groups, whole-view operations and releases, in program order.

Consecutive element-wise instructions over the same iteration shape join one *fusion group*
(one kernel per view-block) as long as running them element by element gives the same result
as running them one at a time: every base that the group writes must be accessed through the
same element mapping everywhere in the group, or through byte ranges that do not overlap. A
full reduction may end a group. Everything else runs as a *whole-view* operation through the
opcode's reference implementation.

A base that the batch declares, writes and reads only inside one group (always through the
same mapping) and releases is a *temporary*: it lives per element (compiled) or per tile
(NumPy) and is never allocated in full.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from shoal.bytecode import BaseDecl, Batch, Const, Instruction, Kind, View, spec
from shoal.engine.node.blocks import broadcast_strides

FUSIBLE_REDUCTIONS = frozenset({"sum", "prod", "min", "max", "any", "all", "mean"})
MAX_GROUP_STEPS = 64
_NUMERIC_KINDS = "biufc"


@dataclass(frozen=True, slots=True)
class Access:
    """How one instruction touches a base over a group's iteration shape."""

    base: int
    key: tuple  # (dtype, offset, strides): the element mapping
    low: int
    high: int
    write: bool


@dataclass
class Group:
    """Instructions fused into one kernel per view-block, over iteration ``shape``."""

    shape: tuple[int, ...]
    instructions: list[Instruction] = field(default_factory=list)
    accesses: dict[int, list[Access]] = field(default_factory=dict)
    reduction: Instruction | None = None

    def closed(self) -> bool:
        return self.reduction is not None or len(self.instructions) >= MAX_GROUP_STEPS


@dataclass(frozen=True)
class WholeOp:
    """An instruction that runs over whole views after everything it depends on."""

    instruction: Instruction


@dataclass(frozen=True)
class Release:
    """The end of a base's life."""

    base: int


Step = Group | WholeOp | Release


@dataclass
class Plan:
    """A batch as steps in program order, and the bases that never need memory."""

    steps: list[Step]
    temporaries: set[int]


def plan_batch(batch: Batch, known: dict[int, BaseDecl]) -> Plan:
    """Group ``batch``'s instructions; ``known`` describes every live base (new ones included)."""
    steps: list[Step] = []
    pending_releases: list[Release] = []
    current: Group | None = None

    def close() -> None:
        nonlocal current
        if current is not None:
            steps.append(current)
            current = None
        steps.extend(pending_releases)
        pending_releases.clear()

    for instruction in batch.instructions:
        if instruction.op == "release":
            pending_releases.append(Release(instruction.attr("base")))
            if current is None:
                close()
            continue
        shape = _fusible_shape(instruction)
        if shape is None:
            close()
            steps.append(WholeOp(instruction))
            continue
        accesses = _accesses(instruction, shape)
        if accesses is None:
            close()
            steps.append(WholeOp(instruction))
            continue
        if current is not None and (current.shape != shape or not _compatible(current, accesses)):
            close()
        if current is None:
            current = Group(shape)
        current.instructions.append(instruction)
        for access in accesses:
            current.accesses.setdefault(access.base, []).append(access)
        if instruction.op in FUSIBLE_REDUCTIONS:
            current.reduction = instruction
        if current.closed():
            close()
    close()
    declared = {decl.id for decl in batch.bases}
    released = {step.base for step in steps if isinstance(step, Release)}
    candidates = (declared & released) - set(batch.data)
    return Plan(steps, _temporaries(steps, candidates, known))


def _fusible_shape(instruction: Instruction) -> tuple[int, ...] | None:
    """The iteration shape if ``instruction`` can join a group, else None."""
    entry = spec(instruction.op)
    if any(out.dtype.kind not in _NUMERIC_KINDS for out in instruction.outputs):
        return None
    for operand in instruction.inputs:
        if isinstance(operand, View) and operand.dtype.kind not in _NUMERIC_KINDS:
            return None
    if instruction.op in FUSIBLE_REDUCTIONS:
        source = instruction.inputs[0]
        if not isinstance(source, View) or source.size == 0 or not _full_reduction(instruction, source):
            return None
        if instruction.op in ("min", "max") and source.dtype.kind == "c":
            return None
        return source.shape
    if entry.kind is not Kind.ELEMENTWISE and instruction.op not in ("copy", "fill"):
        return None
    shapes = {out.shape for out in instruction.outputs}
    if len(shapes) != 1:
        return None
    return shapes.pop()


def _full_reduction(instruction: Instruction, source: View) -> bool:
    axis = instruction.attr("axis")
    if axis is None:
        return True
    axes = axis if isinstance(axis, tuple) else (axis,)
    return sorted(a % source.ndim for a in axes) == list(range(source.ndim)) if source.ndim else False


def _accesses(instruction: Instruction, shape: tuple[int, ...]) -> list[Access] | None:
    """Accesses over ``shape``; None if the instruction overlaps itself with different mappings."""
    accesses: list[Access] = []
    views: list[tuple[View, bool]] = [(view, False) for view in instruction.inputs if isinstance(view, View)]
    if instruction.op not in FUSIBLE_REDUCTIONS:
        views += [(view, True) for view in instruction.outputs]
    for view, write in views:
        try:
            strides = broadcast_strides(view, shape)
        except ValueError:
            return None
        low, high = view.byte_extent()
        accesses.append(Access(view.base, (view.dtype, view.offset, strides), low, high, write))
    if not _conflict_free(accesses, accesses):
        return None
    return accesses


def _compatible(group: Group, accesses: list[Access]) -> bool:
    existing = [a for new in {a.base for a in accesses} for a in group.accesses.get(new, ())]
    return _conflict_free(existing, accesses)


def _conflict_free(existing: list[Access], new: list[Access]) -> bool:
    """True if every write meets other accesses of its base only through the same mapping."""
    for a in new:
        for b in existing:
            if a is b or a.base != b.base or not (a.write or b.write):
                continue
            if a.key == b.key:
                continue
            if a.low < b.high and b.low < a.high:
                return False
    return True


def _temporaries(steps: list[Step], candidates: set[int], known: dict[int, BaseDecl]) -> set[int]:
    """Candidates accessed in exactly one group, always through one mapping, written first."""
    seen_in: dict[int, Group | None] = {}
    keys: dict[int, set] = {}
    first_is_write: dict[int, bool] = {}
    for step in steps:
        if isinstance(step, Release):
            continue
        if isinstance(step, WholeOp):
            for view in (*step.instruction.outputs, *step.instruction.inputs):
                if isinstance(view, View) and view.base in candidates:
                    seen_in[view.base] = None
            continue
        for instruction in step.instructions:
            ordered = [v for v in instruction.inputs if isinstance(v, View)] + list(instruction.outputs)
            for view in ordered:
                if view.base not in candidates:
                    continue
                is_output = any(view is out for out in instruction.outputs)
                if instruction is step.reduction and is_output:
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


def is_constant(operand: View | Const) -> bool:
    return isinstance(operand, Const)


def loop_dtype_of(operand: View | Const) -> np.dtype | type:
    """What ``resolve_dtypes`` needs for an operand: a dtype, or a Python type if weak."""
    if isinstance(operand, View):
        return operand.dtype
    value = operand.value
    if isinstance(value, np.generic):
        return value.dtype
    if isinstance(value, bool):
        return np.dtype(bool)
    return type(value)

"""Reductions and matrix products of distributed arrays (paper 003 §5; issue 11 item 5).

*Reductions* (``sum``, ``prod``, ``min``, ``max``, ``any``, ``all``, ``mean`` over any axes):
every rank reduces each of its pieces of the input with ``keepdims`` into a partial in the
output's dtype; rank 0 places the partials in a stack ``(pieces, *kept shape)`` that starts as
the operation's identity, reduces the stack over the piece axis and the reduced axes, and (for
``mean``) divides by the element count. Integer and boolean results are NumPy's exactly; a
floating sum adds the same numbers in another order (partials by piece, then across pieces).

*Matrix products* (``matmul``/``dot`` of a 2-D left operand): the output's rows stay where they
live; each rank that holds output rows receives the matching rows of the left operand and one
whole copy of the right operand, and multiplies locally (row blocks with the right operand
replicated: simple, correct, and communication of one right operand per rank).

Each planner returns False, before planning anything, for a case it does not cover; the
instruction then runs gathered (:meth:`shoal.cluster.plan.Planner._gathered`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from shoal.bytecode import BaseDecl, Const, Instruction, View, make_attrs
from shoal.cluster.layout import TooFragmented, split, sub_view

if TYPE_CHECKING:
    from shoal.cluster.plan import Planner

REDUCTIONS = frozenset({"sum", "prod", "min", "max", "any", "all", "mean"})
COMBINE = {"mean": "sum"}


def _identity(op: str, dtype: np.dtype) -> object:
    """The value the stack of partials starts from: what the reduction leaves unchanged."""
    if op in ("sum", "mean"):
        return dtype.type(-0.0) if dtype.kind in "fc" else dtype.type(0)  # -0.0 + x is x, also for x = -0.0
    if op == "prod":
        return dtype.type(1)
    if op == "any":
        return np.bool_(False)
    if op == "all":
        return np.bool_(True)
    if dtype.kind == "f":
        return dtype.type(np.inf if op == "min" else -np.inf)
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return dtype.type(info.max if op == "min" else info.min)
    if dtype.kind == "b":
        return np.bool_(op == "min")
    return None


def plan_reduction(planner: Planner, instruction: Instruction) -> bool:
    """Plan a reduction of a distributed input as partials per piece combined at rank 0."""
    from shoal.cluster.plan import access, contiguous

    op = instruction.op
    if op not in REDUCTIONS or not isinstance(instruction.inputs[0], View):
        return False
    source = instruction.inputs[0]
    out = instruction.outputs[0]
    layout = planner.layouts[source.base]
    if not layout.distributed or source.size == 0:
        return False
    axes = instruction.attr("axis")
    axes = tuple(range(source.ndim)) if axes is None else tuple(int(a) % max(1, source.ndim) for a in axes)
    dtype = out.dtype
    requested = instruction.attr("dtype")
    if op == "mean" and (source.dtype.kind not in "fc" or dtype != source.dtype or (requested is not None and np.dtype(requested) != dtype)):
        return False
    identity = _identity(op, dtype)
    if identity is None or source.ndim == 0:
        return False
    kept = tuple(1 if axis in axes else n for axis, n in enumerate(source.shape))
    try:
        pieces = split([(source, layout)], source.shape, planner.config.max_pieces)
    except TooFragmented:
        return False
    stack_shape = (len(pieces), *kept)
    partial_op = COMBINE.get(op, op)
    extra = {"dtype": dtype} if partial_op in ("sum", "prod") else {}
    stack = planner._new_local() if planner.rank == 0 else -1
    stacked = contiguous(stack, dtype, stack_shape)
    if planner.rank == 0:
        planner.ops.append(
            planner.compute(
                [Instruction("fill", (stacked,), (Const(identity),))],
                writes=[access(stacked)],
                declares=[BaseDecl(stack, dtype, math.prod(stack_shape))],
            )
        )
    for number, (box, (owner,)) in enumerate(pieces):
        part = sub_view(source, box)
        region_box = ((number, number + 1), *(((0, 1) if axis in axes else box[axis]) for axis in range(source.ndim)))
        region = sub_view(stacked, region_box)
        partial_shape = region.shape[1:]
        if planner.rank == owner:
            temp = planner._new_local()
            result = contiguous(temp, dtype, partial_shape)
            local = planner.local_view(part)
            reduce = Instruction(partial_op, (result,), (local,), make_attrs(axis=axes, keepdims=True, **extra))
            planner.ops.append(planner.compute([reduce], reads=[access(local)], writes=[access(result)], declares=[BaseDecl(temp, dtype, math.prod(partial_shape))]))
            if owner == 0:
                planner.ops.append(planner.compute([Instruction("copy", (region,), (result,)), _release(temp)], reads=[access(result)], writes=[access(region), access(result)]))
            else:
                tag = planner._next_tag()
                planner.ops.append(planner.send(result, 0, tag))
                planner.ops.append(planner.compute([_release(temp)], writes=[access(result)]))
        elif owner != 0:
            tag = planner._next_tag()
        if owner != 0 and planner.rank == 0:
            receive = planner._receive(owner, tag, dtype, partial_shape)
            source_view = contiguous(receive.temp, dtype, partial_shape)
            planner.ops.append(planner.compute([Instruction("copy", (region,), (source_view,))], reads=[access(source_view)], writes=[access(region)], needs=[receive]))
    _combine(planner, instruction, stacked, stack, axes, extra)
    return True


def _combine(planner: Planner, instruction: Instruction, stacked: View, stack: int, axes: tuple[int, ...], extra: dict) -> None:
    """Rank 0 reduces the stack into the output (through a temporary if the output is
    distributed), then releases the stack."""
    from shoal.cluster.plan import access, contiguous

    out = instruction.outputs[0]
    op = instruction.op
    keepdims = bool(instruction.attr("keepdims", False))
    distributed = planner.layouts[out.base].distributed
    target_base = planner._new_local() if planner.rank == 0 and distributed else -1
    if planner.rank == 0:
        target = contiguous(target_base, out.dtype, out.shape) if distributed else planner.local_view(out)
        declares = [BaseDecl(target_base, out.dtype, max(1, out.size))] if distributed else []
        combined = (0, *(axis + 1 for axis in axes))
        attrs = make_attrs(axis=combined, keepdims=keepdims, **extra)
        # with keepdims the stack's piece axis stays too: the output gains a leading axis of 1
        into = View(target.base, target.dtype, target.offset, (1, *target.shape), (0, *target.strides)) if keepdims else target
        steps = [Instruction(COMBINE.get(op, op), (into,), (stacked,), attrs)]
        if op == "mean":
            count = math.prod(instruction.inputs[0].shape[axis] for axis in axes)  # type: ignore[union-attr]
            steps.append(Instruction("divide", (target,), (target, Const(count))))
        steps.append(_release(stack))
        planner.ops.append(planner.compute(steps, reads=[access(stacked)], writes=[access(target), access(stacked)], declares=declares))
    if distributed:
        assembled = contiguous(target_base, out.dtype, out.shape) if planner.rank == 0 else None
        planner._scatter(out, assembled)
        if planner.rank == 0:
            planner.ops.append(planner.compute([_release(target_base)], writes=[(target_base, 0, 1 << 62)]))


def plan_matmul(planner: Planner, instruction: Instruction) -> bool:
    """Plan ``matmul``/``dot`` with a 2-D left operand by the output's row blocks."""
    from shoal.cluster.plan import access

    if instruction.op not in ("matmul", "dot") or instruction.attrs:
        return False
    left, right = instruction.inputs
    out = instruction.outputs[0]
    if not (isinstance(left, View) and isinstance(right, View)) or left.ndim != 2 or right.ndim not in (1, 2) or out.ndim != right.ndim:
        return False
    if out.size == 0 or left.shape[1] == 0 or out.base in (left.base, right.base):
        return False
    if not any(planner.layouts[view.base].distributed for view in (left, right, out)):
        return False
    try:
        pieces = split([(out, planner.layouts[out.base])], out.shape, planner.config.max_pieces)
    except TooFragmented:
        return False
    if any(out.ndim == 2 and box[1] != (0, out.shape[1]) for box, _ in pieces):
        return False  # a piece with part of a row: not row blocks
    temps: list[int] = []
    copies: dict[int, View] = {}
    for box, (owner,) in pieces:
        rows = box[0]
        if owner not in copies:
            copies[owner] = _operand_at(planner, right, owner, temps)
        left_rows = _operand_at(planner, sub_view(left, (rows, (0, left.shape[1]))), owner, temps)
        if planner.rank == owner:
            target = planner.local_view(sub_view(out, box))
            product = Instruction(instruction.op, (target,), (left_rows, copies[owner]))
            planner.ops.append(planner.compute([product], reads=[access(left_rows), access(copies[owner])], writes=[access(target)]))
    for temp in temps:
        planner.ops.append(planner.compute([_release(temp)], writes=[(temp, 0, 1 << 62)]))
    return True


def _operand_at(planner: Planner, view: View, rank: int, temps: list[int]) -> View:
    """``view`` readable at ``rank``: its local view if it lives there whole, else a copy."""
    from shoal.cluster.layout import owner

    if owner(view, planner.layouts[view.base]) == rank:
        return planner.local_view(view) if planner.rank == rank else view
    return planner._assemble(view, temps, True, at=rank)


def _release(local: int) -> Instruction:
    return Instruction("release", (), (), make_attrs(base=local))

"""Reductions of distributed arrays combined across ranks in a tree (paper 003 §5; issue 11 item 5).

``sum``, ``prod``, ``min``, ``max``, ``any``, ``all``, ``mean`` over any axes; ``argmax`` and
``argmin`` along an axis that no piece splits (a class map over components-first scores, each
row's maximum), where every cell has one piece and nothing is combined. Every rank reduces
each of its pieces of the input with ``keepdims`` into a partial in the output's dtype. The
output (seen with the input's axes, length 1 on the reduced ones) is cut into *cells* at every
piece's bounds, so the pieces that meet in a cell all cover it whole. Per cell, each rank merges
its own partials with the reduction's binary ufunc (``add``, ``multiply``, ``minimum``, ...) in
piece order; then the ranks that hold a partial of the cell merge them pairwise in
``ceil(log2 n)`` rounds (in round ``s`` the rank at position ``i + s`` sends to the one at
``i``, which merges it as the right operand), and the first of them sends the cell to rank 0,
which writes it into the output (``mean`` divides there). Integer and boolean results are
NumPy's exactly; floating results add the same numbers in another, fixed order, so they are the
same bits in every run and flush mode. A reduction along an undistributed axis has one rank per
cell: no rounds, one message per cell.

:func:`plan_reduction` returns False, before planning anything, for a case it does not cover;
the instruction then runs gathered (:meth:`shoal.cluster.plan.Planner._gathered`).
"""

from __future__ import annotations

import itertools
import math
from typing import TYPE_CHECKING

import numpy as np

from shoal.bytecode import BaseDecl, Const, Instruction, View, make_attrs, spec
from shoal.cluster.layout import Box, TooFragmented, split, sub_view
from shoal.cluster.ops import release_of

if TYPE_CHECKING:
    from shoal.cluster.plan import Planner

REDUCTIONS = frozenset({"sum", "prod", "min", "max", "any", "all", "mean", "argmax", "argmin"})
ARG_REDUCTIONS = frozenset({"argmax", "argmin"})  # no combining: each piece must hold its whole axis
COMBINE = {"mean": "sum"}


def access(view: View) -> tuple[int, int, int]:
    from shoal.cluster.plan import access as plan_access

    return plan_access(view)


def contiguous(base: int, dtype: np.dtype, shape: tuple[int, ...]) -> View:
    from shoal.cluster.plan import contiguous as plan_contiguous

    return plan_contiguous(base, dtype, shape)


def plan_reduction(planner: Planner, instruction: Instruction) -> bool:
    """Plan a reduction of a distributed input: partials per piece, combined by a tree."""
    op = instruction.op
    if op not in REDUCTIONS or not isinstance(instruction.inputs[0], View):
        return False
    source = instruction.inputs[0]
    out = instruction.outputs[0]
    layout = planner.layouts[source.base]
    if layout.at_root or source.size == 0 or source.ndim == 0:
        return False
    axes = instruction.attr("axis")
    if op in ARG_REDUCTIONS and axes is None:
        return False  # a flat index: the whole array's, not a piece's
    axes = tuple(range(source.ndim)) if axes is None else tuple(int(a) % source.ndim for a in ((axes,) if isinstance(axes, int) else axes))
    dtype = out.dtype
    requested = instruction.attr("dtype")
    if op == "mean" and (source.dtype.kind not in "fc" or dtype != source.dtype or (requested is not None and np.dtype(requested) != dtype)):
        return False
    if op == "mean" and source.dtype == np.float16:  # NumPy sums float16 in float32 for a mean; float16 partials overflow
        return False
    if dtype.kind not in "biufc" or (op in ("min", "max") and dtype.kind == "c"):
        return False
    try:
        pieces = split([(source, layout)], source.shape, planner.config.max_pieces)
    except TooFragmented:
        return False
    if op in ARG_REDUCTIONS and any(box[axis] != (0, source.shape[axis]) for box, _ in pieces for axis in axes):
        return False  # the axis is split: pieces' indices would need combining
    kept = tuple(1 if axis in axes else n for axis, n in enumerate(source.shape))
    whole = _kept_view(out, kept, axes)
    try:
        cells, owners = _by_owner(planner, _cells(pieces, kept, axes), whole)
    except TooFragmented:
        return False
    if sum(len(touched) for touched in cells) > planner.config.max_pieces:
        return False
    partial_op = COMBINE.get(op, op)
    if op in ARG_REDUCTIONS:
        extra = make_attrs(axis=axes[0], keepdims=True)
    else:
        extra = make_attrs(axis=axes, keepdims=True, **({"dtype": dtype} if partial_op in ("sum", "prod") else {}))
    merge = spec(op).combine or ""  # none for argmax and argmin: each of their cells has one piece
    assert merge or op in ARG_REDUCTIONS
    accumulators: dict[tuple[int, Box], View] = {}  # (rank, cell) -> this rank's partial of the cell
    contributors: dict[Box, list[int]] = {cell: [] for touched in cells for cell in touched}  # in element order
    for number, (box, (holder,)) in enumerate(pieces):
        partial_box = tuple(((0, 1) if axis in axes else box[axis]) for axis in range(source.ndim))
        partial_shape = tuple(high - low for low, high in partial_box)
        result: View | None = None
        temp = -1
        if planner.rank == holder:
            temp = planner._new_local()
            result = contiguous(temp, dtype, partial_shape)
            local = planner.local_view(sub_view(source, box))
            reduce = Instruction(partial_op, (result,), (local,), extra)
            planner.ops.append(planner.compute([reduce], reads=[access(local)], writes=[access(result)], declares=[BaseDecl(temp, dtype, math.prod(partial_shape))]))
        for cell in cells[number]:
            first = holder not in contributors[cell]
            if first:
                contributors[cell].append(holder)
            if planner.rank != holder:
                continue
            assert result is not None
            part = sub_view(result, tuple((low - base_low, high - base_low) for (low, high), (base_low, _) in zip(cell, partial_box)))
            if first:
                accumulators[(holder, cell)] = _copy_to_new(planner, part)
            else:
                _merge_into(planner, merge, accumulators[(holder, cell)], part)
        if planner.rank == holder:
            planner.ops.append(planner.compute([release_of(temp)], writes=[(temp, 0, 1 << 62)]))
    count = math.prod(source.shape[axis] for axis in axes) if op == "mean" else 0
    for cell, ranks in contributors.items():
        holder = owners[cell]
        if holder in ranks:  # the owner of the cell is the root of its tree: no message after it
            ranks = [holder, *(rank for rank in ranks if rank != holder)]
        root = _tree(planner, merge, ranks, cell, accumulators)
        _deliver(planner, root, holder, cell, accumulators, whole, count)
    return True


def _by_owner(planner: Planner, cells: list[list[Box]], whole: View) -> tuple[list[list[Box]], dict[Box, int]]:
    """The cells cut further where the output changes rank, and each cell's owner: the tree's
    result goes straight to the rank holding that part of the output (a reduce-scatter)."""
    layout = planner.layouts[whole.base]
    refined: dict[Box, list[Box]] = {}
    owners: dict[Box, int] = {}
    for cell in dict.fromkeys(cell for touched in cells for cell in touched):
        parts = split([(sub_view(whole, cell), layout)], tuple(high - low for low, high in cell), planner.config.max_pieces)
        refined[cell] = []
        for box, (holder,) in parts:
            absolute = tuple((low + base, high + base) for (low, high), (base, _) in zip(box, cell))
            refined[cell].append(absolute)
            owners[absolute] = holder
    return [[part for cell in touched for part in refined[cell]] for touched in cells], owners


def _cells(pieces: list, kept: tuple[int, ...], axes: tuple[int, ...]) -> list[list[Box]]:
    """The output cells each piece contributes to: the grid cut at every piece's bounds on the
    kept axes, so two pieces' parts of the output are either one cell or disjoint cells."""
    cuts = [sorted({0, n, *(bound for box, _ in pieces for bound in box[axis])}) if axis not in axes else [0, 1] for axis, n in enumerate(kept)]
    touched: list[list[Box]] = []
    for box, _ in pieces:
        ranges = []
        for axis, bounds in enumerate(cuts):
            if axis in axes:
                ranges.append([(0, 1)])
            else:
                low, high = box[axis]
                ranges.append([(a, b) for a, b in itertools.pairwise(bounds) if low <= a and b <= high])
        touched.append([tuple(cell) for cell in itertools.product(*ranges)])
    return touched


def _copy_to_new(planner: Planner, view: View) -> View:
    temp = planner._new_local()
    copy = contiguous(temp, view.dtype, view.shape)
    planner.ops.append(
        planner.compute([Instruction("copy", (copy,), (view,))], reads=[access(view)], writes=[access(copy)], declares=[BaseDecl(temp, view.dtype, math.prod(view.shape))])
    )
    return copy


def _merge_into(planner: Planner, merge: str, accumulator: View, other: View) -> None:
    """``accumulator = merge(accumulator, other)``: the left operand holds the earlier elements."""
    planner.ops.append(planner.compute([Instruction(merge, (accumulator,), (accumulator, other))], reads=[access(accumulator), access(other)], writes=[access(accumulator)]))


def _tree(planner: Planner, merge: str, ranks: list[int], cell: Box, accumulators: dict) -> int:
    """Combine the ranks' partials of ``cell`` pairwise in ceil(log2 len(ranks)) rounds: in round
    ``step`` the rank at position ``i + step`` sends to the one at ``i``, which merges it as the
    right operand (rank order is element order). Returns the rank holding the result."""
    step = 1
    while step < len(ranks):
        for position in range(0, len(ranks) - step, 2 * step):
            left, right = ranks[position], ranks[position + step]
            tag = planner._next_tag()
            if planner.rank == right:
                accumulator = accumulators.pop((right, cell))
                planner.ops.append(planner.send(accumulator, left, tag, late=True))
                planner.ops.append(planner.compute([release_of(accumulator.base)], writes=[(accumulator.base, 0, 1 << 62)]))
            if planner.rank == left:
                accumulator = accumulators[(left, cell)]
                receive = planner._receive(right, tag, accumulator.dtype, accumulator.shape, late=True)
                arrived = contiguous(receive.temp, accumulator.dtype, accumulator.shape)
                planner.ops.append(
                    planner.compute(
                        [Instruction(merge, (accumulator,), (accumulator, arrived))],  # the flush releases ``arrived``
                        reads=[access(accumulator), access(arrived)],
                        writes=[access(accumulator)],
                        needs=[receive],
                    )
                )
        step *= 2
    return ranks[0]


def _deliver(planner: Planner, root: int, holder: int, cell: Box, accumulators: dict, whole: View, count: int) -> None:
    """Move the cell's result from ``root`` into the output at ``holder`` (dividing by ``count``
    first for ``mean``) and release it."""
    if planner.rank == root:
        accumulator = accumulators.pop((root, cell))
        if count:
            planner.ops.append(planner.compute([Instruction("divide", (accumulator,), (accumulator, Const(count)))], reads=[access(accumulator)], writes=[access(accumulator)]))
    if root != holder:
        tag = planner._next_tag()
        if planner.rank == root:
            planner.ops.append(planner.send(accumulator, holder, tag, late=True))
            planner.ops.append(planner.compute([release_of(accumulator.base)], writes=[(accumulator.base, 0, 1 << 62)]))
        if planner.rank == holder:
            planner._receive_into(root, tag, planner.local_view(sub_view(whole, cell)), late=True)
        return
    if planner.rank == root:
        region = planner.local_view(sub_view(whole, cell))
        planner.ops.append(
            planner.compute(
                [Instruction("copy", (region,), (accumulator,)), release_of(accumulator.base)],
                reads=[access(accumulator)],
                writes=[access(region), access(accumulator)],
            )
        )


def _kept_view(target: View, kept: tuple[int, ...], axes: tuple[int, ...]) -> View:
    """``target`` (the output) seen with the input's axes: length 1, stride 0 on reduced axes."""
    if target.ndim == len(kept):
        return target
    strides = iter(target.strides)
    return View(target.base, target.dtype, target.offset, kept, tuple(0 if axis in axes else next(strides) for axis in range(len(kept))))


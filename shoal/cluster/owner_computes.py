"""The owner-computes scheme: an instruction cut into pieces in which every operand lies on one
rank, each piece run where its output lives after the inputs held elsewhere arrive (see
:mod:`shoal.cluster.plan`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from shoal.bytecode import BaseDecl, Const, Instruction, View
from shoal.cluster.layout import TooFragmented, broadcast_to, everywhere, owner, split, sub_view
from shoal.cluster.ops import Access, Op, access, contiguous, release_of

if TYPE_CHECKING:
    from shoal.cluster.plan import Planner

FEW_PIECES = 16  # pieces per rank an instruction may split into before its inputs are assembled


class OwnerComputesPlanning:
    """The :class:`~shoal.cluster.plan.Planner` methods of the owner-computes scheme."""

    def _owner_computes(self: Planner, instruction: Instruction) -> bool:
        """Plan ``instruction`` piece by piece where its output lives; False if it cannot be."""
        outputs = instruction.outputs
        shape = outputs[0].shape
        views = [*outputs, *(broadcast_to(view, shape) for view in instruction.inputs if isinstance(view, View))]
        layouts = [self.layouts[view.base] for view in views]
        try:  # every operand on one rank in each piece: no copies; else inputs are assembled
            pieces = split(list(zip(views, layouts)), shape, min(self.config.max_pieces, FEW_PIECES * self.ranks))
            assembled = False
        except TooFragmented:
            pieces = split(list(zip(views[: len(outputs)], layouts)), shape, self.config.max_pieces)
            assembled = True
        if any(len(set(owners[: len(outputs)])) != 1 for _, owners in pieces):
            return False
        output_bases = {view.base for view in outputs}
        overlapping = any(
            isinstance(view, View) and view.base in output_bases and _overlaps(view, outputs) for view in instruction.inputs
        )
        mine: list[tuple[tuple, list[tuple[bool, View | Const]], list[Op]]] = []
        temps: list[int] = []
        for box, owners in pieces:
            runner = owners[0]
            operands: list[tuple[bool, View | Const]] = []  # (a view of a global base?, operand)
            needs: list[Op] = []
            position = len(outputs)
            for operand in instruction.inputs:
                if isinstance(operand, Const):
                    operands.append((False, operand))
                    continue
                view = views[position]
                if everywhere(layouts[position]):
                    owner_rank = runner
                else:
                    owner_rank = owner(sub_view(view, box), layouts[position]) if assembled else owners[position]
                position += 1
                part = sub_view(view, box)
                if owner_rank < 0:  # spans ranks: gather it at the runner
                    copy = self._assemble(part, temps, True, at=runner)
                    if self.rank == runner:
                        operands.append((False, copy))
                    continue
                if owner_rank == runner:
                    operands.append((True, part))
                    continue
                tag = self._next_tag()
                sent = _unbroadcast(part)  # a broadcast input travels once, not repeated
                if self.rank == owner_rank:
                    local = self.local_view(sent)
                    self.ops.append(Op("send", reads=[access(local)], peer=runner, tag=tag, view=local))
                if self.rank == runner:
                    receive = self._receive(owner_rank, tag, part.dtype, sent.shape)
                    needs.append(receive)
                    received = contiguous(receive.temp, part.dtype, sent.shape)
                    strides = tuple(0 if stride == 0 else step for stride, step in zip(part.strides, received.strides))
                    operands.append((False, View(receive.temp, part.dtype, 0, part.shape, strides)))
            if self.rank == runner:
                mine.append((box, operands, needs))
        snapshots: dict[tuple, View] = {}
        releases: list[int] = []
        computes: list[Op] = []  # after every snapshot: a piece may write what a later one reads
        for box, operands, needs in mine:
            local_inputs: list[View | Const] = []
            reads: list[Access] = []
            for is_global, operand in operands:
                if is_global:
                    assert isinstance(operand, View)
                    local = self.local_view(operand)
                    if overlapping and operand.base in output_bases:
                        local = self._snapshot(local, snapshots, releases)
                    operand = local
                local_inputs.append(operand)
                if isinstance(operand, View):
                    reads.append(access(operand))
            local_outputs = tuple(self.local_view(view, box) for view in outputs)
            computes.append(
                Op(
                    "compute",
                    reads=reads,
                    writes=[access(view) for view in local_outputs],
                    instructions=[Instruction(instruction.op, local_outputs, tuple(local_inputs), instruction.attrs)],
                    needs=needs,
                )
            )
        self.ops.extend(computes)
        for temp in releases + temps:
            self.ops.append(Op("compute", writes=[(temp, 0, 1 << 62)], instructions=[release_of(temp)]))
        return True

    def _snapshot(self: Planner, local: View, snapshots: dict[tuple, View], releases: list[int]) -> View:
        """A copy of ``local`` taken before the instruction writes any piece (NumPy reads every
        input before writing an overlapping output)."""
        key = (local.base, local.offset, local.shape, local.strides, local.dtype.str)
        known = snapshots.get(key)
        if known is not None:
            return known
        temp = self._new_local()
        copy = contiguous(temp, local.dtype, local.shape)
        releases.append(temp)
        self.ops.append(
            Op(
                "compute",
                reads=[access(local)],
                writes=[(temp, 0, 1 << 62)],
                declares=[BaseDecl(temp, local.dtype, math.prod(local.shape))],
                instructions=[Instruction("copy", (copy,), (local,))],
            )
        )
        snapshots[key] = copy
        return copy


def _unbroadcast(view: View) -> View:
    """``view`` with one index on each axis it repeats (stride 0)."""
    if all(stride or n <= 1 for n, stride in zip(view.shape, view.strides)):
        return view
    return View(view.base, view.dtype, view.offset, tuple(1 if stride == 0 else n for n, stride in zip(view.shape, view.strides)), view.strides)


def _overlaps(view: View, outputs: tuple[View, ...]) -> bool:
    low, high = view.byte_extent()
    for output in outputs:
        if output.base == view.base:
            other_low, other_high = output.byte_extent()
            if low < other_high and other_low < high:
                return True
    return False


"""The gathered scheme: rank 0 runs an instruction on assembled copies of its distributed
operands and sends each output piece back to its owner (see :mod:`shoal.cluster.plan`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from shoal.bytecode import BaseDecl, Const, Instruction, Kind, View
from shoal.cluster.layout import split, sub_view
from shoal.cluster.ops import Op, access, contiguous, release_of

if TYPE_CHECKING:
    from shoal.cluster.plan import Planner

# Kinds whose instructions write every element of their outputs: the gathered scheme need not
# fetch the outputs' old contents first.
WRITES_ALL = frozenset({Kind.CREATION, Kind.REDUCTION, Kind.LINALG, Kind.SCAN, Kind.SORTING, Kind.ELEMENTWISE})
QUIET_GATHERED = frozenset({Kind.CREATION})


class GatheredPlanning:
    """The :class:`~shoal.cluster.plan.Planner` methods of the gathered scheme."""

    def _gathered(self: Planner, instruction: Instruction, kind: Kind) -> None:
        """Run ``instruction`` at rank 0 on assembled copies of its distributed operands."""
        remote = [view for view in (*instruction.outputs, *instruction.inputs) if isinstance(view, View) and not self.layouts[view.base].at_root]
        if not remote:
            if self.rank == 0:
                self._run_at_root(instruction, {})
            return
        if self.rank == 0 and kind not in QUIET_GATHERED and instruction.op not in self.warned:
            self.warned.add(instruction.op)
            self.warnings.append(f"the cluster runs {instruction.op!r} on data gathered at rank 0, not distributed")
        assembled: dict[View, View] = {}
        temps: list[int] = []
        needs_old = kind not in WRITES_ALL
        for position, view in enumerate((*instruction.outputs, *instruction.inputs)):
            if not isinstance(view, View) or view in assembled:
                continue
            if self.layouts[view.base].at_root:
                continue
            read = position >= len(instruction.outputs) or needs_old or view in instruction.inputs  # ``out=`` its own input
            assembled[view] = self._assemble(view, temps, fetch=read)
        if self.rank == 0:
            self._run_at_root(instruction, assembled)
        for view in instruction.outputs:
            if view in assembled:
                self._scatter(view, assembled[view] if self.rank == 0 else None)
        if self.rank == 0:
            for temp in temps:
                self.ops.append(Op("compute", writes=[(temp, 0, 1 << 62)], instructions=[release_of(temp)]))

    def _run_at_root(self: Planner, instruction: Instruction, assembled: dict[View, View]) -> None:
        """Rank 0's computation of ``instruction`` on its assembled copies and its own bases."""
        outputs = tuple(assembled.get(view) or self.local_view(view) for view in instruction.outputs)
        inputs = tuple(
            operand if isinstance(operand, Const) else (assembled.get(operand) or self.local_view(operand)) for operand in instruction.inputs
        )
        self.ops.append(
            Op(
                "compute",
                reads=[access(view) for view in inputs if isinstance(view, View)],
                writes=[access(view) for view in outputs],
                instructions=[Instruction(instruction.op, outputs, inputs, instruction.attrs)],
            )
        )

    def _assemble(self: Planner, view: View, temps: list[int], fetch: bool, at: int = 0) -> View:
        """Rank ``at``'s temporary copy of ``view`` (its contents gathered from the owners if
        ``fetch``); the owners plan their sends. The temporary base goes to ``temps`` (at ``at``)."""
        layout = self.layouts[view.base]
        here = self.rank == at
        temp = self._new_local() if here else -1
        target = contiguous(temp, view.dtype, view.shape)
        if here:
            temps.append(temp)
            self.ops.append(
                Op("compute", writes=[(temp, 0, 1 << 62)], declares=[BaseDecl(temp, view.dtype, math.prod(view.shape))])
            )
        if not fetch:
            return target
        for box, (holder,) in split([(view, layout)], view.shape, 1 << 30):
            part = sub_view(view, box)
            destination = sub_view(target, box)
            if holder == at:
                if here:
                    local = self.local_view(part)
                    self.ops.append(Op("compute", reads=[access(local)], writes=[access(destination)], instructions=[Instruction("copy", (destination,), (local,))]))
                continue
            tag = self._next_tag()
            if self.rank == holder:
                local = self.local_view(part)
                self.ops.append(Op("send", reads=[access(local)], peer=at, tag=tag, view=local))
            if here:
                self._receive_into(holder, tag, destination)
        return target

    def _scatter(self: Planner, view: View, assembled: View | None) -> None:
        """Send each piece of rank 0's result for ``view`` to the rank that holds it."""
        layout = self.layouts[view.base]
        for box, (holder,) in split([(view, layout)], view.shape, 1 << 30):
            part = sub_view(view, box)
            if holder == 0:
                if self.rank == 0:
                    assert assembled is not None
                    source = sub_view(assembled, box)
                    local = self.local_view(part)
                    self.ops.append(Op("compute", reads=[access(source)], writes=[access(local)], instructions=[Instruction("copy", (local,), (source,))]))
                continue
            tag = self._next_tag()
            if self.rank == 0:
                assert assembled is not None
                source = sub_view(assembled, box)
                self.ops.append(Op("send", reads=[access(source)], peer=holder, tag=tag, view=source))
            if self.rank == holder:
                self._receive_into(0, tag, self.local_view(part))

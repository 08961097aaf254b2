"""Results that stand for a region of another base instead of being written out.

``work = 0.2 * (center + north + ...); ...; center[:] = work`` ends a batch with two copies of
the same values while ``work`` is still bound to a name: the fused kernel writes ``work`` in full
besides the grid region. If the batch writes ``work`` only inside one fusion group, copies all of
it into a region of another base there, and then changes neither, ``work`` becomes an *alias*:
the kernel keeps it per element like a temporary, and afterwards the region holds its contents
(``Storage.alias``).

A later batch that touches ``work``, or writes or releases the region's base, before it releases
``work`` gives ``work`` memory of its own first
(:func:`shoal.engine.node.run.storage.settle_aliases`): at the start of that batch the
region still holds its values. A loop that binds ``work`` anew every iteration releases the old
one before it writes the grid again, so no copy is ever made.
"""

from __future__ import annotations

import math

from shoal.bytecode import BaseDecl, Instruction, View


def find_aliases(
    groups: list[tuple[int, list[Instruction], set[int]]],
    changed: list[set[int]],
    lasting: set[int],
    known: dict[int, BaseDecl],
) -> dict[int, View]:
    """The bases of ``lasting`` (new, never released, used inside one group only, written first
    through one mapping) that can be aliases, with the regions that will hold their contents.

    ``groups`` holds each fusion group's position among the plan's steps, its instructions and
    the bases it accesses; ``changed[p]`` the bases that step ``p`` writes or releases.
    """
    aliases: dict[int, View] = {}
    for position, instructions, accessed in groups:
        for base in lasting & accessed:
            region = _copied_whole(instructions, base, known[base])
            if region is None or region.base in lasting:
                continue
            if not any(region.base in later for later in changed[position + 1 :]):
                aliases[base] = region
    return aliases


def _copied_whole(instructions: list[Instruction], base: int, decl: BaseDecl) -> View | None:
    """The view that a copy writes all of ``base`` into after the last write of ``base``, if
    nothing writes that view's base after the copy."""
    last_write = max(i for i, instruction in enumerate(instructions) if any(out.base == base for out in instruction.outputs))
    for position in range(len(instructions) - 1, last_write, -1):
        instruction = instructions[position]
        if instruction.op != "copy" or not isinstance(instruction.inputs[0], View):
            continue
        source, target = instruction.inputs[0], instruction.outputs[0]
        if source.base != base or not _whole(source, decl) or target.shape != source.shape or target.dtype != decl.dtype:
            continue
        if target.base == base or any(out.base == target.base for later in instructions[position + 1 :] for out in later.outputs):
            return None
        return target
    return None


def _whole(view: View, decl: BaseDecl) -> bool:
    """True if ``view`` shows all of its base, in C order."""
    if view.offset != 0 or view.dtype != decl.dtype or math.prod(view.shape) != decl.size:
        return False
    step = view.dtype.itemsize
    for extent, stride in zip(reversed(view.shape), reversed(view.strides)):
        if extent > 1 and stride != step:
            return False
        step *= extent
    return True

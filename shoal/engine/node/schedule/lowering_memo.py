"""Groups of one batch lowered once per structure.

A loop recorded into one batch (80 sweeps of a 1-D Jacobi, the time steps of an FDTD) gives
groups that differ only in their bases (temporaries and intermediate arrays are new every
iteration), their instructions and their constants' values: their kernel programs have the same
slots, geometry and view-blocks. Lowering a group and listing the base-blocks its view-blocks
touch cost about 0.1 ms each per group; here a group whose structure was lowered before in the
batch gets that program bound to its own bases, instructions and constants, and shares the
earlier program's base-block lists (with its own bases) and kernel key.

The key holds everything :func:`lower` and the base-block lists read: the group's shape,
reduced axes and deferred bases, and per instruction its opcode, attributes, role (reduction,
axis reduction, element step) and operands. Views enter with their base as its position among
the group's bases (a temporary among the temporaries; any other with its element size, which
sizes its base-blocks), dtype, offset, shape and strides; constants with the dtype their slot
gets (their values are bound afresh). In a group without deferred writes an offset enters as
its position among its base's offsets, so the groups of a loop sliding along an array
(Floyd-Warshall's column ``k``) are bound too, at their own offsets and with their own
base-block lists. Groups that read rows through a gather are lowered every time.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from shoal.bytecode import Const, Instruction, View
from shoal.engine.node.lower.program import (
    CONST,
    KernelProgram,
    KernelStep,
    ReductionStep,
    Slot,
    const_dtype,
    lower,
)
from shoal.engine.node.plan.plan import Group


class LoweringMemo:
    """Kernel programs of one batch by group structure (see the module's text)."""

    def __init__(self, itemsize: Callable[[int], int]) -> None:
        self._itemsize = itemsize  # a base's element size (it sizes the base's base-blocks)
        self._known: dict[tuple, tuple[KernelProgram, list[Instruction], list[int], list[tuple[int, int]]]] = {}
        # A bound program's id -> (the program, kept so that its id is not reused; its template;
        # its bases renamed; whether offsets moved).
        self._templates: dict[int, tuple[KernelProgram, KernelProgram, dict[int, int], bool]] = {}
        self._facts: dict[tuple[int, str], tuple[KernelProgram, Any]] = {}  # (template id, what) -> (template, fact)

    def lower(self, group: Group, temporaries: set[int], block_elements: int) -> KernelProgram:
        """``lower(group, temporaries, block_elements)``, reusing an earlier group's program."""
        found = _key(group, temporaries, block_elements, self._itemsize)
        if found is None:
            return lower(group, temporaries, block_elements)
        key, constants, bases, offsets = found
        known = self._known.get(key)
        if known is None:
            program = lower(group, temporaries, block_elements)
            self._known[key] = (program, list(group.instructions), bases, offsets)
            return program
        template, instructions, earlier, earlier_offsets = known
        renamed = {old: new for old, new in zip(earlier, bases) if old != new}
        moved = {old: new for old, new in zip(earlier_offsets, offsets) if old[1] != new[1]}  # a base renamed alone is in renamed
        program = _bound(template, instructions, group.instructions, constants, renamed, moved)
        self._templates[id(program)] = (program, template, renamed, bool(moved))
        return program

    def _binding(self, program: KernelProgram) -> tuple[KernelProgram, dict[int, int], bool]:
        """(template, bases renamed, offsets moved) of ``program``; itself, nothing, False for a
        program not bound here."""
        entry = self._templates.get(id(program))
        if entry is None or entry[0] is not program:
            return program, {}, False
        return entry[1], entry[2], entry[3]

    def shared(self, program: KernelProgram, what: str, compute: Callable[[], Any]) -> Any:
        """``compute()``, a fact of ``program``'s structure and geometry that names no base (its
        kernel's key, whether it compiles), computed once for the programs bound from one
        template."""
        template = self._binding(program)[0]
        known = self._facts.get((id(template), what))
        if known is None:
            known = self._facts[(id(template), what)] = (template, compute())
        return known[1]

    def base_blocks(self, program: KernelProgram, compute: Callable[[], list]) -> list:
        """``compute()``: per array slot, per view-block, the ``(base, base_block)`` pairs it
        touches; for a program bound at the template's offsets, its template's with the bound
        program's bases."""
        _template, renamed, moved = self._binding(program)
        if moved:
            return compute()
        lists = self.shared(program, "blocks", compute)
        if not renamed:
            return lists
        return [[[(renamed.get(base, base), k) for base, k in blocks] for blocks in per_slot] for per_slot in lists]


def _key(
    group: Group, temporaries: set[int], block_elements: int, itemsize: Callable[[int], int]
) -> tuple[tuple, list[Const], list[int], list[tuple[int, int]]] | None:
    """The group's structure, its constants in slot order, its bases in order of first use and
    its ``(base, offset)`` pairs in order of first use; None if it is not memoised.

    Without deferred writes an array's byte offset is left out of the structure (but for its
    place in the element) and numbered per base by first use: the groups of a loop that slides
    along an array (a column ``k`` per iteration) share one structure. A deferred write's
    program depends on its base's offsets (how far its reads reach), so they stay in."""
    if group.reads_rows:
        return None
    names: dict[int, int] = {}
    bases: list[int] = []
    places: dict[tuple[int, int], int] = {}
    offsets: list[tuple[int, int]] = []
    slide = not group.deferred

    def canonical(base: int) -> tuple:
        if base in temporaries:
            return ("t", names.setdefault(base, len(names)))
        if base not in names:
            names[base] = len(names)
            bases.append(base)
        return ("b", names[base], itemsize(base))

    def view(operand: View) -> tuple:
        offset = operand.offset
        if slide and operand.base not in temporaries:
            place = (operand.base, offset)
            if place not in places:
                places[place] = len(places)
                offsets.append(place)
            offset = ("o", places[place], offset % operand.dtype.itemsize)
        return (canonical(operand.base), operand.dtype, offset, operand.shape, operand.strides)

    reductions = {id(i) for i in group.reductions}
    axis_reductions = {id(i) for i in group.axis_reductions}
    constants: list[Const] = []
    items: list[tuple] = []
    try:
        for instruction in group.instructions:
            role = "r" if id(instruction) in reductions else "a" if id(instruction) in axis_reductions else "e"
            read = instruction.inputs[:1] if role != "e" else instruction.inputs
            operands = []
            for position, operand in enumerate(instruction.inputs):
                if isinstance(operand, Const):
                    operands.append(("c", const_dtype(operand)))
                    if position < len(read):
                        constants.append(operand)
                elif type(operand) is View:
                    operands.append(view(operand))
                else:
                    return None
            outputs = []
            for out in instruction.outputs:
                if type(out) is not View:
                    return None
                outputs.append(view(out))
            items.append((instruction.op, instruction.attrs, role, tuple(outputs), tuple(operands)))
        deferred = tuple(sorted(canonical(base) for base in group.deferred))
        key = (block_elements, group.shape, group.reduced_axes, deferred, tuple(items))
        hash(key)
    except (KeyError, TypeError):  # a base without a declaration, an attribute that does not hash
        return None
    return key, constants, bases, offsets


def _bound(
    template: KernelProgram,
    old: list[Instruction],
    new: list[Instruction],
    constants: list[Const],
    renamed: dict[int, int],
    moved: dict[tuple[int, int], tuple[int, int]],
) -> KernelProgram:
    """``template`` with ``new``'s instructions where it has ``old``'s, ``constants`` in its
    constant slots (in slot order), its bases ``renamed`` and its arrays' ``(base, offset)``
    pairs ``moved``."""
    position = {id(instruction): index for index, instruction in enumerate(old)}
    steps = [
        KernelStep(s.op, s.outputs, s.inputs, s.loop_in, s.loop_out, new[position[id(s.instruction)]], s.axis_reduction)
        for s in template.steps
    ]  # fmt: skip
    reductions = []
    for r in template.reductions:
        instruction = new[position[id(r.instruction)]]
        reductions.append(ReductionStep(r.op, r.source, r.position, r.acc, instruction.outputs[0], instruction))
    slots = list(template.slots)
    values = iter(constants)
    for index, slot in enumerate(slots):
        if slot.kind == CONST:
            slots[index] = Slot(CONST, slot.dtype, const=next(values))
        elif (slot.base, slot.offset) in moved:
            base, offset = moved[(slot.base, slot.offset)]
            slots[index] = replace(slot, base=base, offset=offset)
        elif slot.base in renamed:
            slots[index] = replace(slot, base=renamed[slot.base])
    return KernelProgram(
        template.shape, slots, steps, reductions, template.partition, template.elements,
        template.reaches, template.reduced, template.sweeps, template.stencil,
    )  # fmt: skip

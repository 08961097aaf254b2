"""Replaying a rank's plan for a batch it has planned before (the cluster plan cache).

A program's loop sends the same batch again and again: the same instructions on the same views,
with new base numbers for its temporaries and new data. Planning is deterministic and every rank
sees the same batches in the same order, so every rank finds the same batches in its cache and
replays them in step; no rank tells another.

:func:`batch_key` names a batch up to its base numbers: bases are numbered in order of first
appearance, and the key holds every instruction (operation, views, constants by type,
attributes), every declaration (dtype, size, whether it carries data) and the layout of
every base the batch uses but does not declare. Anything planning reads is in the key, so a batch
that differs in any of it plans afresh; a replay gives exactly the operations planning would.

A :class:`Template` keeps a plan with its local base numbers, tags, data and constants made
symbolic (planning reads a constant's type, never its value):
a local base is either a base the batch uses (by its number in the key) or one planning created
(by its order), a tag is counted from the first one the plan took, and data is the part of a
declared base's data this rank holds.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from shoal.bytecode import Batch, Const, Instruction, View
from shoal.cluster.layout import local_part
from shoal.cluster.ops import new_op, release_of
from shoal.frozen_values import new_decl, new_instruction, new_view

if TYPE_CHECKING:
    from shoal.cluster.layout import Layout
    from shoal.cluster.plan import Access, Op, Planner


class Uncacheable(Exception):
    """A plan names something a replay could not renumber: it is planned afresh each time."""


def instruction_key(instruction: Instruction, number: Callable[[int], object]) -> tuple:
    """What planning reads of a computing ``instruction``: its operation, attributes and views,
    each base as ``number`` names it, constants by type (a constant's value is the template's to
    fill in, ``Template.constants``)."""

    def operand(value: View | Const) -> tuple:
        if isinstance(value, Const):
            return (type(value.value),)
        return (number(value.base), value.dtype, value.offset, value.shape, value.strides)

    return (instruction.op, tuple(map(operand, instruction.outputs)), tuple(map(operand, instruction.inputs)), repr(instruction.attrs))


def first_use_numbering() -> tuple[Callable[[int], int], list[int]]:
    """A function numbering bases by first use (0, 1, ...), and the list it fills with them in
    that order."""
    numbers: dict[int, int] = {}
    order: list[int] = []

    def number(base: int) -> int:
        found = numbers.get(base)
        if found is None:
            found = numbers[base] = len(order)
            order.append(base)
        return found

    return number, order


def batch_key(
    batch: Batch, layouts: dict[int, Layout], valid: dict[int, tuple] | None = None, carried: Collection[int] | None = None
) -> tuple[tuple, list[int]] | None:
    """The batch's key and its bases in order of first appearance (the key's numbering); None
    for a batch that names a base neither declared nor known (planning reports it). ``carried``:
    the bases that come with data, if not yet in ``batch.data``."""
    number, order = first_use_numbering()
    data = batch.data if carried is None else carried
    declared = tuple((number(decl.id), decl.dtype, decl.size, decl.id in data) for decl in batch.bases)
    instructions = instructions_key(batch.instructions, number)
    if instructions is None:
        return None
    used = used_bases(order, {decl.id for decl in batch.bases}, layouts, valid)
    if used is None:
        return None
    return (declared, instructions, used), order


def instructions_key(instructions: list[Instruction], number: Callable[[int], object]) -> tuple | None:
    """Each of ``instructions`` as planning reads it, bases as ``number`` names them (a release
    as its base); None if a release names something that is not a base."""
    keys = []
    for instruction in instructions:
        if instruction.op == "release":
            base = instruction.attr("base")
            if not isinstance(base, int):
                return None
            keys.append(("release", number(base)))
            continue
        keys.append(instruction_key(instruction, number))
    return tuple(keys)


def used_bases(order: list[int], fresh: set[int], layouts: dict[int, Layout], valid: dict[int, tuple] | None) -> tuple | None:
    """The key's part for the bases in ``order`` not in ``fresh`` (the batch uses them, earlier
    batches declared them): number, layout and halo state of each; None if one has no layout."""
    used = []
    for number, base in enumerate(order):
        if base in fresh:
            continue
        layout = layouts.get(base)
        if layout is None:
            return None
        used.append((number, layout, None if valid is None else valid.get(base)))
    return tuple(used)


@dataclass
class Template:
    """A plan with symbolic local bases (``>= 0``: the n-th base planning created; ``< 0``: the
    base numbered ``-1 - slot`` in the key), tags relative to the plan's first, and data slots."""

    ops: list[Op]
    created: int  # local bases planning created
    tags: int  # tags planning took
    declared: list[tuple[int, Layout, int | None, int | None]] = field(default_factory=list)  # (key number, layout, slot, block bytes)
    data: list[tuple[int, int, int]] = field(default_factory=list)  # (op, slot, key number whose data it holds)
    valid: list[tuple[int, tuple, tuple | None]] = field(default_factory=list)  # (key number, its halos' current bytes and demand after the batch)
    graph: list[tuple[int, ...]] | None = None  # per op, the ops that depend on it (``Flusher``)
    bases: int = 0  # bases the batch names (the length of the key's order)
    constants: list[tuple[int, int, int, int]] = field(default_factory=list)  # (op, its instruction, input, the batch's constant)


class PlanCache:
    """The templates of the last ``capacity`` distinct batches, least recently used dropped.

    A key whose batch every rank kept a template for gets a *number* (:meth:`number`, called on
    every rank with the same verdict, in the same order): rank 0 may then send a later batch of
    that key as its number and base ids (:mod:`shoal.cluster.replayed`). Every rank's cache sees
    the same keys in the same order, so numbers and evictions agree across ranks."""

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.templates: OrderedDict[tuple, Template | None] = OrderedDict()
        self.hits = 0
        self.misses = 0
        self._numbers: dict[tuple, int] = {}
        self._keys: dict[int, tuple] = {}
        self._next_number = 0

    def get(self, key: tuple) -> Template | None:
        template = self.templates.get(key)
        if template is not None:
            self.templates.move_to_end(key)
            self.hits += 1
        else:
            self.misses += 1
        return template

    def put(self, key: tuple, template: Template | None) -> None:
        """Keep ``template`` (None: planned afresh each time) for ``key``; a key kept again loses
        its number until every rank kept its new template."""
        number = self._numbers.pop(key, None)
        if number is not None:
            del self._keys[number]
        self.templates[key] = template
        self.templates.move_to_end(key)
        while len(self.templates) > self.capacity:
            evicted, _ = self.templates.popitem(last=False)
            number = self._numbers.pop(evicted, None)
            if number is not None:
                del self._keys[number]

    def number(self, key: tuple) -> None:
        """Every rank kept a template for ``key``: give it the next number (once)."""
        if self.templates.get(key) is not None and key not in self._numbers:
            self._numbers[key] = self._next_number
            self._keys[self._next_number] = key
            self._next_number += 1

    def number_of(self, key: tuple) -> int | None:
        return self._numbers.get(key)

    def numbered(self, number: int) -> tuple[tuple, Template] | None:
        """The key of ``number`` and this rank's template for it (None if unknown)."""
        key = self._keys.get(number)
        template = None if key is None else self.templates.get(key)
        return None if template is None or key is None else (key, template)


def constants(batch: Batch) -> list[Const]:
    """The batch's constants in the key's order: each instruction's constant inputs in turn."""
    return [value for instruction in batch.instructions for value in instruction.inputs if isinstance(value, Const)]


def _constant_places(ops: list[Op], batch: Batch) -> list[tuple[int, int, int, int]]:
    """Where each of ``batch``'s constants stands in ``ops`` (just planned for it), as
    ``Template.constants`` holds them; constants planning made itself stay as they are. Raises
    :class:`Uncacheable` if one constant object stands for two of the batch's."""
    slots: dict[int, int] = {}
    twice: set[int] = set()
    for slot, value in enumerate(constants(batch)):
        if id(value) in slots:
            twice.add(id(value))
        slots.setdefault(id(value), slot)
    places = []
    for position, op in enumerate(ops):
        for index, instruction in enumerate(op.instructions):
            for place, value in enumerate(instruction.inputs):
                if isinstance(value, Const) and id(value) in slots:
                    if id(value) in twice:
                        raise Uncacheable("a constant object the batch uses twice")
                    places.append((position, index, place, slots[id(value)]))
    return places


def _fill_constants(ops: list[Op], places: list[tuple[int, int, int, int]], values: list[Const]) -> None:
    for position, index, place, slot in places:
        op = ops[position]
        instruction = op.instructions[index]
        inputs = list(instruction.inputs)
        inputs[place] = values[slot]
        op.instructions[index] = Instruction(instruction.op, instruction.outputs, tuple(inputs), instruction.attrs)


def view_renamer(base_of: Callable[[int], int]) -> Callable[[View], View]:
    """A function giving a view over the base ``base_of`` maps its own to, made once for each
    view object it is given (a template's instructions share their view objects)."""
    made: dict[int, View] = {}

    def view(value: View) -> View:
        found = made.get(id(value))
        if found is None:
            found = made[id(value)] = new_view(base_of(value.base), value.dtype, value.offset, value.shape, value.strides)
        return found

    return view


def renumbered(ops: list[Op], local: Callable[[int], int], tag: Callable[[int], int], replaying: bool = False) -> list[Op]:
    """Copies of ``ops`` (not yet run) with every local base number and tag mapped, without
    their data; ``needs`` point at the copies; ``replaying``: each copy names the operation it
    copies as its model. Built through the slot makers: replaying a part of lattice Boltzmann
    copies about 400 operations."""
    view = view_renamer(local)

    def operand(value: View | Const) -> View | Const:
        return value if isinstance(value, Const) else view(value)

    def accesses(values: list[Access]) -> list[Access]:
        return [(local(base), low, high) for base, low, high in values]

    def instruction(value: Instruction) -> Instruction:
        if value.op == "release":
            return release_of(local(int(value.attr("base"))))
        return new_instruction(value.op, tuple(map(view, value.outputs)), tuple(map(operand, value.inputs)), value.attrs)

    copies: dict[int, Op] = {}
    result = []
    for op in ops:
        copy = new_op(
            op.kind,
            accesses(op.reads),
            accesses(op.writes),
            [instruction(value) for value in op.instructions],
            [copies[id(need)] for need in op.needs],
            [new_decl(local(decl.id), decl.dtype, decl.size) for decl in op.declares] if op.declares else [],
            op.peer,
            tag(op.tag) if op.kind != "compute" else op.tag,
            None if op.view is None else view(op.view),
            local(op.temp) if op.temp >= 0 else op.temp,
            op.dtype,
            op.shape,
            op.late,
            None,
            {},
            None,
            False,
            False,
            op if replaying else None,
            op.positions,
        )
        copies[id(op)] = copy
        result.append(copy)
    return result


def make_template(planner: Planner, ops: list[Op], order: list[int], first_local: int, first_tag: int, known: dict[int, int], batch: Batch) -> Template:
    """``ops``, just planned for ``batch``, as a template. ``known``: the local base of each base
    the batch used that existed before it (by global number); ``first_local``, ``first_tag``: the
    planner's counters before planning. Raises :class:`Uncacheable`."""
    numbers = {base: position for position, base in enumerate(order)}
    slots = {local: -1 - numbers[base] for base, local in known.items()}
    created = planner._next_local - first_local
    for offset in range(created):
        slots[first_local + offset] = offset

    def local(number: int) -> int:
        slot = slots.get(number)
        if slot is None:
            raise Uncacheable(f"local base {number}")
        return slot

    limit = planner.tag_limit
    template = Template(renumbered(ops, local, lambda tag: (tag - first_tag) % limit), created, (planner._tag - first_tag) % limit)
    declared = planner.declared
    for decl in batch.bases:
        here = declared.get(decl.id)
        slot = None if here is None else local(here)
        template.declared.append((numbers[decl.id], planner.declared_layouts[decl.id], slot, None if here is None else planner.block_bytes.get(here)))
    holders = {here: base for base, here in declared.items()}
    for position, op in enumerate(ops):
        for here in op.data:
            if here not in holders:
                raise Uncacheable(f"data of local base {here}")
            template.data.append((position, local(here), numbers[holders[here]]))
    template.valid = [(numbers[base], planner.valid[base], planner.demand.get(base)) for base in order if base in planner.valid]
    template.bases = len(order)
    template.constants = _constant_places(ops, batch)
    return template


def replay(planner: Planner, template: Template, order: list[int], batch: Batch) -> list[Op]:
    """The operations of ``template`` for ``batch`` (whose bases in key order are ``order``),
    with the planner's bookkeeping brought to where planning would have left it."""
    first_local = planner._next_local
    first_tag = planner._tag
    limit = planner.tag_limit
    decls = {decl.id: decl for decl in batch.bases}

    slots = {slot: first_local + slot for slot in range(template.created)}  # looked up by a bound method: no Python call per operand
    here = planner.local
    slots.update((-1 - number, here[base]) for number, base in enumerate(order) if base in here)
    local = slots.__getitem__
    ops = renumbered(template.ops, local, lambda tag: (tag + first_tag) % limit, replaying=True)
    if template.constants:
        _fill_constants(ops, template.constants, constants(batch))
    for number, layout, slot, block_bytes in template.declared:
        base = order[number]
        planner.layouts[base] = layout
        planner.decls[base] = decls[base]
        if slot is not None:
            planner.local[base] = first_local + slot
            if block_bytes is not None:
                planner.block_bytes[first_local + slot] = block_bytes
    for position, slot, number in template.data:
        base = order[number]
        layout = planner.layouts[base]
        ops[position].data[first_local + slot] = local_part(batch.data[base], layout, planner.rank, planner.local_data)
    for instruction in batch.instructions:  # as Planner._release leaves them
        if instruction.op == "release":
            base = int(instruction.attr("base"))
            planner.layouts.pop(base, None)
            planner.decls.pop(base, None)
            planner.valid.pop(base, None)
            planner.demand.pop(base, None)
            released = planner.local.pop(base, None)
            if released is not None:
                planner._retired.append(released)
    for number, valid, demand in template.valid:
        planner.valid[order[number]] = valid
        if demand is None:
            planner.demand.pop(order[number], None)
        else:
            planner.demand[order[number]] = demand
    planner._next_local = first_local + template.created
    planner._tag = (first_tag + template.tags) % limit
    return ops

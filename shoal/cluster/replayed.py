"""Batches sent as the number of a plan every rank keeps.

A loop sends the same batch again and again with new base ids. Once every rank has kept a
template for a batch's plan-cache key (:meth:`~shoal.cluster.plan_cache.PlanCache.number`, agreed
in the gather that ends every batch), rank 0 sends a later batch of that key as a ``REPLAY``
command: the key's number and the batch's bases in the key's order, and its constants (the key
holds their types, not their values), no bytecode. Each rank rebuilds what replaying needs (the
batch's declarations, releases and constants: the rest is in its plan) from the key.

Nothing is taken on trust: the number must name a plan this rank keeps, the ids must be as many
as the key's bases and distinct, the bases the batch declares fresh non-negative ids, and every
other base live here with the layout and halo state the key was made with. The key vouches for
the rest: it was made from a batch this rank verified in full (or admitted by the key of one,
:mod:`shoal.cluster.verified`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from shoal.bytecode import BaseDecl, Batch, BytecodeError, Const, Instruction
from shoal.bytecode.codec import DEFAULT_LIMITS, SCALAR_TAGS, Reader, Writer
from shoal.cluster.ops import release_of
from shoal.cluster.plan_cache import constants, used_bases

if TYPE_CHECKING:
    from shoal.cluster.layout import AnyLayout
    from shoal.cluster.plan import Planner

_PLACEHOLDERS: dict[str, Instruction] = {}


def request(planner: Planner, keyed: tuple[tuple, list[int]] | None) -> list[int] | None:
    """Rank 0: the integers of a ``REPLAY`` command for the batch whose :meth:`Planner.keyed`
    is ``keyed`` (its plan's number, then its bases in the key's order), or None: send it whole."""
    if keyed is None:
        return None
    key, order = keyed
    number = planner.cache.number_of(key)
    return None if number is None else [number, *order]


def encode_constants(batch: Batch) -> bytes:
    """Rank 0: the payload of a ``REPLAY`` command, the batch's constants in the key's order."""
    return write_constants(constants(batch))


def write_constants(values: list[Const]) -> bytes:
    """``values`` in the wire format's scalar encoding, one after another."""
    if not values:
        return b""
    writer = Writer(DEFAULT_LIMITS)
    for value in values:
        writer.value(value.value, "constant")
    return b"".join(writer.chunks)


def read_constant(reader: Reader, place: int, kind: type) -> Const:
    """The next constant ``reader`` holds, which must be a scalar of type ``kind`` (constant
    ``place`` of a command: named in the error)."""
    try:
        if not reader.remaining or reader.buffer[reader.pos] not in SCALAR_TAGS:
            raise ValueError(f"constant {place} is missing or not a scalar")
        value = reader.value("constant")
    except BytecodeError as error:
        raise ValueError(f"rank 0 sent a malformed constant {place}: {error}") from None
    if type(value) is not kind:
        raise ValueError(f"constant {place} is a {type(value).__name__}, not the {kind.__name__} of the instruction it stands in")
    return Const(value)


def _decode_constants(payload: bytes, types: list[type]) -> list[Const]:
    """The constants of a ``REPLAY`` payload, each of the type the key names for its place."""
    reader = Reader(memoryview(payload), DEFAULT_LIMITS)
    values = [read_constant(reader, place, kind) for place, kind in enumerate(types)]
    if reader.remaining:
        raise ValueError(f"rank 0 sent {reader.remaining} bytes more than the replay's {len(types)} constants")
    return values


def receive(planner: Planner, ints: list[int], payload: bytes = b"") -> tuple[Batch, tuple[tuple, list[int]], list[int], dict[int, AnyLayout]]:
    """Another rank: the batch a ``REPLAY`` command with ``ints`` and ``payload`` (its constants)
    stands for (its declarations, and its instructions as placeholders holding its constants but
    for the releases), its key and order, the bases whose data rank 0 sends, and the layouts of
    the bases it declares. Raises ``ValueError`` if the command does not fit this rank's plans and
    bases."""
    if not ints:
        raise ValueError("rank 0 sent a replay without the number of a plan")
    found = planner.cache.numbered(ints[0])
    if found is None:
        raise ValueError(f"rank 0 named plan {ints[0]}, which this rank does not keep")
    key, template = found
    order = list(ints[1:])
    if len(order) != template.bases or len(set(order)) != len(order):
        raise ValueError(f"rank 0 named {len(order)} bases for plan {ints[0]} of {template.bases} distinct bases")
    declared, instructions, used = key
    numbers = {number for number, *_ in declared}
    for number in numbers:
        base = order[number]
        if base < 0 or base in planner.decls:
            raise ValueError(f"rank 0 declared base {base} again, which is live here or negative")
    if used_bases(order, {order[number] for number in numbers}, planner.layouts, planner.halo_state()) != used:
        raise ValueError(f"rank 0 replayed plan {ints[0]} over bases whose layouts or halos differ here")
    bases = [BaseDecl(order[number], dtype, size) for number, dtype, size, _data in declared]
    ids = [order[number] for number, _dtype, _size, data in declared if data]
    kinds = [operand[0] for entry in instructions if entry[0] != "release" for operand in entry[2] if len(operand) == 1]
    values = iter(_decode_constants(payload, kinds))  # a constant's key is its type alone
    steps = [
        release_of(order[entry[1]]) if entry[0] == "release" else _placeholder(entry[0], tuple(next(values) for operand in entry[2] if len(operand) == 1))
        for entry in instructions
    ]
    layouts = {order[number]: layout for number, layout, _slot, _bytes in template.declared}
    return Batch(bases=bases, instructions=steps), (key, order), ids, layouts


def _placeholder(op: str, values: tuple[Const, ...]) -> Instruction:
    """An instruction standing for one the plan holds (it is counted, never run; its constants
    fill the plan's places for them)."""
    if values:
        return Instruction(op, (), values)
    found = _PLACEHOLDERS.get(op)
    if found is None:
        found = _PLACEHOLDERS[op] = Instruction(op, (), ())
    return found

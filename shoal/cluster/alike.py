"""A long batch's alike loop iterations sent once: the later ones as references to the first.

A batch that a loop fills before it reads anything holds the same iteration over and over with
new temporaries (Jacobi's 50 sweeps, Black-Scholes' 30 days). Rank 0 sent its whole bytecode,
and every other rank decoded and verified all of it before it could plan its first iteration and
send its first halo: at 2 ranks, Jacobi 2000² x 500 kept rank 0 waiting 0.088 s while rank 1
spent 0.077 s decoding and verifying (issue 11's waiting target), Black-Scholes' rank 1 about
0.16 s of a 1.0-1.3 s run.

Rank 0 now cuts such a batch into loop iterations before sending it (the cut planning makes,
:func:`shoal.cluster.segments.split`) and sends an ``ALIKE`` command: the bytecode of the
iterations that differ from every earlier one, and for each other iteration the earlier one it
repeats, its bases in order of first use and its constants' values. :func:`decode` rebuilds the
batch exactly, instruction for instruction, and the parts' bounds, so the other ranks cut it
where rank 0 did without looking for the loop's period. The rebuilt batch is verified like any
other, with the same verdicts and messages; an instruction rebuilt from an earlier one is
verified by comparison with it (:func:`shoal.bytecode.verify`'s ``alike``): the same operation,
views, attributes and constant types over live bases of the same sizes pass the same checks.

Nothing in the command is taken on trust: a reference must name an earlier iteration, the bases
must be as many as that iteration names and distinct, every constant a scalar of the type the
instruction it stands in has there, and nothing may be left over.
"""

from __future__ import annotations

import struct
from collections.abc import Callable

from shoal.bytecode import Batch, Const, Instruction, dumps, loads
from shoal.bytecode.codec import DEFAULT_LIMITS, Reader
from shoal.cluster.ops import release_of
from shoal.cluster.plan_cache import first_use_numbering, instructions_key, view_renamer
from shoal.cluster.replayed import read_constant, write_constants
from shoal.frozen_values import new_instruction

FULL = -1  # an iteration whose bytecode the command carries
_LENGTH = struct.Struct("<Q")


def relative(instructions: list[Instruction]) -> tuple[tuple, list[int]]:
    """What planning reads of ``instructions`` with their bases numbered by first use among
    them (releases included), and the bases in that order."""
    number, order = first_use_numbering()
    keys = instructions_key(instructions, number)
    if keys is None:
        raise ValueError("rank 0 sent a release of something that is not a base")
    return keys, order


def encode(batch: Batch, starts: list[int]) -> tuple[bytes, list[int], int] | None:
    """Rank 0: the payload and the structure (the integers after the watched conditions and the
    bases that carry data) of an ``ALIKE`` command for ``batch`` cut at ``starts``, and how many
    instructions it sends as repeats; None if no iteration repeats an earlier one (the batch
    then goes whole)."""
    ends = [*starts[1:], len(batch.instructions)]
    first_of: dict[tuple, int] = {}
    sent: list[Instruction] = []
    values: list[Const] = []
    structure = [len(starts)]
    for index, (low, high) in enumerate(zip(starts, ends)):
        chunk = batch.instructions[low:high]
        key, order = relative(chunk)
        first = first_of.setdefault(key, index)
        if first == index:
            sent.extend(chunk)
            structure += [FULL, high - low]
        else:
            structure += [first, len(order), *order]
            values.extend(value for instruction in chunk for value in instruction.inputs if isinstance(value, Const))
    if len(sent) == len(batch.instructions):
        return None
    code = dumps(Batch(bases=batch.bases, instructions=sent))
    return _LENGTH.pack(len(code)) + code + write_constants(values), structure, len(batch.instructions) - len(sent)


def decode(payload: bytes, structure: list[int]) -> tuple[Batch, list[int], list[int]]:
    """Another rank: the batch an ``ALIKE`` command stands for, where its parts start, and per
    instruction the position of the one it was rebuilt from (-1: sent as bytecode). Raises
    ``ValueError`` (or :class:`~shoal.bytecode.BytecodeError`) if the command is malformed."""
    if len(payload) < _LENGTH.size:
        raise ValueError("rank 0 sent an ALIKE command without its bytecode")
    (length,) = _LENGTH.unpack_from(payload)
    if length > len(payload) - _LENGTH.size:
        raise ValueError(f"rank 0 announced {length} bytes of bytecode in an ALIKE command of {len(payload)} bytes")
    sent = loads(payload[_LENGTH.size : _LENGTH.size + length])
    reader = Reader(memoryview(payload)[_LENGTH.size + length :], DEFAULT_LIMITS)
    numbers = iter(structure)
    count = _next(numbers, "the number of iterations")
    if count < 2:
        raise ValueError(f"rank 0 sent an ALIKE command of {count} iterations")
    instructions: list[Instruction] = []
    origins: list[int] = []
    starts: list[int] = []
    orders: dict[int, list[int]] = {}  # an iteration's bases in first-use order, once asked for
    taken = 0  # instructions of ``sent`` used
    for index in range(count):
        starts.append(len(instructions))
        kind = _next(numbers, f"iteration {index}")
        if kind == FULL:
            size = _next(numbers, f"the length of iteration {index}")
            if not 0 < size <= len(sent.instructions) - taken:
                raise ValueError(f"rank 0 sent iteration {index} as {size} instructions, with {len(sent.instructions) - taken} left")
            instructions.extend(sent.instructions[taken : taken + size])
            origins.extend([-1] * size)
            taken += size
            continue
        if not 0 <= kind < index:
            raise ValueError(f"rank 0 sent iteration {index} as a repeat of iteration {kind}, which is not an earlier one")
        low, high = starts[kind], starts[kind + 1]
        model = instructions[low:high]
        model_order = orders.get(kind)
        if model_order is None:
            model_order = orders[kind] = relative(model)[1]
        named = _next(numbers, f"the bases of iteration {index}")
        if named != len(model_order):
            raise ValueError(f"rank 0 named {named} bases for iteration {index}, which repeats iteration {kind} of {len(model_order)}")
        order = [_next(numbers, f"a base of iteration {index}") for _ in range(named)]
        if len(set(order)) != len(order):
            raise ValueError(f"rank 0 named a base twice for iteration {index}")
        mapping = dict(zip(model_order, order))
        instructions.extend(_rebuilt(model, mapping.__getitem__, reader, len(instructions)))
        origins.extend(range(low, high))
    if taken != len(sent.instructions):
        raise ValueError(f"rank 0 sent {len(sent.instructions) - taken} instructions no iteration uses")
    if next(numbers, None) is not None:
        raise ValueError("rank 0 sent more integers than the ALIKE command's iterations use")
    if reader.remaining:
        raise ValueError(f"rank 0 sent {reader.remaining} bytes more than the repeated iterations' constants")
    return Batch(bases=sent.bases, instructions=instructions), starts, origins


def _released(instruction: Instruction) -> int:
    base = instruction.attr("base")
    if type(base) is not int:
        raise ValueError(f"rank 0 sent a release of {base!r}, which is not a base")
    return base


def _next(numbers: object, what: str) -> int:
    value = next(numbers, None)  # type: ignore[call-overload]
    if value is None:
        raise ValueError(f"rank 0's ALIKE command ends before {what}")
    return value


def _rebuilt(model: list[Instruction], base: Callable[[int], int], reader: Reader, place: int) -> list[Instruction]:
    """``model``'s instructions over the bases ``base`` maps its own to, with the next constants
    of ``reader`` (``place``: the position of the first rebuilt instruction, for messages)."""
    view = view_renamer(base)
    rebuilt = []
    for offset, instruction in enumerate(model):
        if instruction.op == "release":
            rebuilt.append(release_of(base(_released(instruction))))
            continue
        inputs = tuple(read_constant(reader, place + offset, type(value.value)) if isinstance(value, Const) else view(value) for value in instruction.inputs)
        rebuilt.append(new_instruction(instruction.op, tuple(map(view, instruction.outputs)), inputs, instruction.attrs))
    return rebuilt

"""Floating-point notes of a batch that ran in another process, as they travel back.

An engine in another process (the proxy server, an MPI rank) notes the conditions each
instruction of a batch met (``shoal.engine.fp_signals``) and sends them back to the process
that recorded the batch, which warns at the recording lines. The notes arrive from outside
the process, so :func:`decode` checks them before anything uses them: the text is ASCII of a
bounded size, each note names an instruction inside the batch, a known condition and a name
NumPy's messages use (lower-case words), and there are at most :data:`PER_INSTRUCTION` notes
per instruction.

The format is text, one note a line: ``POSITION CONDITION NAME`` (the position in the batch,
the condition's bit, the operation's name in NumPy's message), e.g. ``3 1 log`` for "divide by
zero encountered in log".
"""

from __future__ import annotations

import re

from shoal.engine.fp_signals import CATEGORY_TEXT

PER_INSTRUCTION = 8  # notes one instruction may carry (four conditions, a name or two each)
MAX_NAME = 40
_NAME = "[a-z][a-z0-9_ ]{0,%d}" % (MAX_NAME - 1)  # noqa: UP031 (the braces are the pattern's)
_LINE = re.compile(rf"(0|[1-9][0-9]{{0,11}}) ([1248]) ({_NAME})".encode("ascii"))
_MESSAGE = re.compile(
    rf"(divide by zero|overflow|underflow|invalid value) encountered in ({_NAME})"
)
_BITS = {text: bit for bit, text in CATEGORY_TEXT.items()}
_SEPARATOR = " encountered in "


class NotesError(ValueError):
    """Notes that do not follow the format or do not fit the batch they are for."""


def encode(notes: list[tuple[int, str]]) -> bytes:
    """``notes`` as (position, NumPy's message) in the wire text (messages not in NumPy's form
    are left out: they cannot be checked on arrival)."""
    lines = []
    for position, message in notes:
        found = _MESSAGE.fullmatch(message)
        if found is not None:
            lines.append(f"{position} {_BITS[found.group(1)]} {found.group(2)}\n")
    return "".join(lines).encode("ascii")


def max_bytes(instructions: int) -> int:
    """The most bytes the notes of a batch of ``instructions`` may take."""
    return instructions * PER_INSTRUCTION * (12 + 3 + MAX_NAME + 1)


def decode(data: bytes | bytearray | memoryview, instructions: int) -> list[tuple[int, str]]:
    """The (position, message) notes in ``data`` for a batch of ``instructions`` instructions;
    raises :class:`NotesError` for anything malformed, out of the batch, or too much."""
    raw = bytes(data)
    if len(raw) > max_bytes(instructions):
        raise NotesError(
            f"{len(raw)} bytes of floating-point notes for a batch of {instructions} instructions"
        )
    if not raw:
        return []
    if not raw.endswith(b"\n"):
        raise NotesError("floating-point notes end in the middle of a line")
    lines = raw[:-1].split(b"\n")
    if len(lines) > instructions * PER_INSTRUCTION:
        raise NotesError(
            f"{len(lines)} floating-point notes for a batch of {instructions} instructions"
        )
    notes: dict[tuple[int, str], None] = {}
    counts: dict[int, int] = {}
    for line in lines:
        found = _LINE.fullmatch(line)
        if found is None:
            raise NotesError(f"malformed floating-point note {line[:80]!r}")
        position = int(found.group(1))
        if position >= instructions:
            raise NotesError(
                f"floating-point note for instruction {position} of a batch of {instructions}"
            )
        counts[position] = counts.get(position, 0) + 1
        if counts[position] > PER_INSTRUCTION:
            raise NotesError(
                f"more than {PER_INSTRUCTION} floating-point notes for instruction {position}"
            )
        message = (
            f"{CATEGORY_TEXT[int(found.group(2))]}{_SEPARATOR}{found.group(3).decode('ascii')}"
        )
        notes[(position, message)] = None
    return list(notes)

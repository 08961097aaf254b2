"""The one error type of the bytecode layer."""

from __future__ import annotations


class BytecodeError(ValueError):
    """A batch is malformed: it cannot be encoded, decoded or verified.

    The message names where the problem is (byte offset, instruction index and opcode, base id)
    and what it is.
    """

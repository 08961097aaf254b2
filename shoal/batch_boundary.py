"""Where a batch that reached its size threshold ends: at the same point of the program's loop.

A loop records the same sequence of instructions every iteration. Cut at a fixed instruction
count, its batches start at a different point of the iteration each time and no two look alike;
cut where the previous batch began, each batch holds the same whole number of iterations and
they all have one structure, which the node engine plans once (``plan_cache``).

So past the threshold the runtime flushes only when the last ``WINDOW`` instructions look like
the ``WINDOW`` instructions before the current batch began (opcodes and view geometry, not base
ids or data), or when the batch reaches twice the threshold. The first batch, and one after a
batch shorter than the window, flush at the threshold itself.
"""

from __future__ import annotations

from collections import deque

from shoal.bytecode import Instruction, View

WINDOW = 32


def signature(instruction: Instruction) -> tuple:
    """What an instruction looks like, without base ids or constant values."""
    if instruction.op == "release":
        return ("release",)
    operands = tuple(
        (value.dtype.char, value.offset, value.shape, value.strides) if isinstance(value, View) else type(value.value)
        for value in (*instruction.outputs, *instruction.inputs)
    )
    return (instruction.op, operands)


class BatchBoundary:
    """Decides whether a batch past its threshold ends at the instruction just recorded."""

    def __init__(self, window: int = WINDOW) -> None:
        self.window = window
        self._before: int | None = None  # hash of the window that preceded the current batch
        self._recent: deque[tuple] | None = None
        self._seen = 0

    def due(self, instructions: list[Instruction], threshold: int) -> bool:
        """True if ``instructions`` (at least ``threshold`` of them) should run now."""
        count = len(instructions)
        if self._before is None or count >= 2 * threshold:
            return True
        if self._recent is None:
            start = max(0, count - self.window)
            self._recent = deque((signature(i) for i in instructions[start:]), maxlen=self.window)
        else:
            self._recent.extend(signature(i) for i in instructions[self._seen :])
        self._seen = count
        return len(self._recent) == self.window and hash(tuple(self._recent)) == self._before

    def flushed(self, instructions: list[Instruction]) -> None:
        """Note the batch that just ended: the next one matches against its last instructions."""
        if len(instructions) >= self.window:
            self._before = hash(tuple(signature(i) for i in instructions[-self.window :]))
        else:
            self._before = None
        self._recent = None
        self._seen = 0

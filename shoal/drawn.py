"""Large random draws remembered as how they were drawn, so their parts can be drawn again.

``Generator.random`` (float64) and ``Generator.uniform`` with scalar bounds take exactly one
64-bit output of the bit generator per element. With a PCG64 or PCG64DXSM bit generator, which
can jump ahead, any contiguous range of such a draw is drawn again, bit for bit, from the
generator's state before the call advanced to the range's first element. The cluster sends that
state (:data:`WIRE_BYTES` bytes) to a rank instead of the rank's part of the data
(:mod:`shoal.cluster.rank`).

A draw is remembered (:func:`note`) only when the generator's state after it is exactly the
state before it advanced by its element count, and forgotten (:func:`spoil`) once anything may
have written its data. ``numpy.random`` is touched only by draws: programs that never draw do
not load it.
"""

from __future__ import annotations

import math
import weakref
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np

KINDS = ("random", "uniform")
_NAMES = ("PCG64", "PCG64DXSM")  # bit generators that jump ahead one 64-bit output at a time
_WORD = 2**64
WIRE_BYTES = 8 * 10  # kind, generator, state (2 words), inc (2 words), has_uint32, uinteger, low, high


@dataclass(frozen=True)
class Recipe:
    """How a draw was made: the method, the bit generator and its state before the call."""

    kind: str
    generator: str
    state: int
    inc: int
    has_uint32: int
    uinteger: int
    low: float = 0.0
    high: float = 1.0

    def draw(self, begin: int, count: int) -> np.ndarray:
        """Elements ``[begin, begin + count)`` of the draw, as the original call gave them."""
        bits = getattr(np.random, self.generator)()
        bits.state = self._state()
        bits.advance(begin)
        generator = np.random.Generator(bits)
        if self.kind == "random":
            return generator.random(count)
        return generator.uniform(self.low, self.high, count)

    def _state(self) -> dict[str, Any]:
        return {
            "bit_generator": self.generator,
            "state": {"state": self.state, "inc": self.inc},
            "has_uint32": self.has_uint32,
            "uinteger": self.uinteger,
        }

    def encode(self) -> np.ndarray:
        """The recipe as :data:`WIRE_BYTES` bytes."""
        words = np.array(
            [
                KINDS.index(self.kind),
                _NAMES.index(self.generator),
                self.state % _WORD,
                self.state // _WORD,
                self.inc % _WORD,
                self.inc // _WORD,
                self.has_uint32,
                self.uinteger,
            ],
            dtype=np.uint64,
        )
        return np.concatenate([words.view(np.uint8), np.array([self.low, self.high]).view(np.uint8)])

    @classmethod
    def decode(cls, buffer: np.ndarray) -> Recipe:
        """The recipe in ``buffer`` (bytes from another process), checked field by field."""
        if buffer.dtype != np.uint8 or buffer.size != WIRE_BYTES:
            raise ValueError(f"a draw's recipe is {WIRE_BYTES} bytes, not {buffer.size}")
        words = [int(word) for word in buffer[:64].view(np.uint64)]
        low, high = (float(bound) for bound in buffer[64:].view(np.float64))
        kind, generator, has_uint32, uinteger = words[0], words[1], words[6], words[7]
        if kind >= len(KINDS) or generator >= len(_NAMES):
            raise ValueError(f"a draw's recipe names method {kind} of bit generator {generator}, which are unknown")
        if has_uint32 > 1 or uinteger >= 2**32:
            raise ValueError("a draw's recipe holds a bit generator state out of range")
        if not (math.isfinite(low) and math.isfinite(high) and math.isfinite(high - low)):
            raise ValueError(f"a draw's recipe has bounds {low!r} and {high!r}, which are not finite")
        state, inc = words[2] + words[3] * _WORD, words[4] + words[5] * _WORD
        return cls(KINDS[kind], _NAMES[generator], state, inc, has_uint32, uinteger, low, high)


def state_before(generator: Any, kind: str) -> dict[str, Any] | None:
    """The bit generator's state before a draw of ``kind`` that :func:`recipe` can remember."""
    if kind not in KINDS or not isinstance(generator, np.random.Generator):
        return None
    bits = generator.bit_generator
    if type(bits) not in {getattr(np.random, name) for name in _NAMES}:
        return None
    return bits.state


def recipe(generator: np.random.Generator, before: dict[str, Any], kind: str, low: Any, high: Any, result: Any) -> Recipe | None:
    """The recipe of the draw that made ``result``, or None when the draw cannot be made again
    range by range: not float64, bounds that are not scalars, or a generator that took other
    than one 64-bit output per element."""
    if type(result) is not np.ndarray or result.dtype != np.float64 or not result.flags.c_contiguous:
        return None
    made = expected(before, kind, low, high)
    if made is None:
        return None
    bits = generator.bit_generator
    advanced = type(bits)()
    advanced.state = before
    advanced.advance(result.size)
    after = bits.state
    if after["state"] != advanced.state["state"] or (after["has_uint32"], after["uinteger"]) != (before["has_uint32"], before["uinteger"]):
        return None
    return made


def expected(before: dict[str, Any], kind: str, low: Any, high: Any) -> Recipe | None:
    """The recipe a float64 draw of ``kind`` from a generator in state ``before`` will have if
    it takes one 64-bit output per element (:func:`recipe` checks that once it is made); None for
    bounds that are not scalars."""
    if kind == "uniform":
        if np.ndim(low) or np.ndim(high):
            return None
        low, high = float(low), float(high)
    else:
        low, high = 0.0, 1.0
    inner = before["state"]
    return Recipe(kind, before["bit_generator"], inner["state"], inner["inc"], before["has_uint32"], before["uinteger"], low, high)


_noted: dict[int, tuple[weakref.ref, Recipe]] = {}


def note(data: np.ndarray, made: Recipe) -> None:
    """Remember that ``data`` (a flat array, as drawn) was made by ``made``."""
    key = id(data)
    _noted[key] = (weakref.ref(data, lambda _ref: _noted.pop(key, None)), made)


def recipe_of(data: np.ndarray) -> Recipe | None:
    """The recipe that made ``data``, if it is a remembered draw nothing has written since."""
    found = _noted.get(id(data))
    if found is None or found[0]() is not data:
        return None
    return found[1]


def spoil(data: np.ndarray) -> None:
    """Forget ``data``'s recipe: something may write it."""
    if _noted:
        _noted.pop(id(data), None)


def spoil_all(arrays: Iterable[np.ndarray]) -> None:
    """Forget the recipes of ``arrays``: a component that was given them may write them (the
    cluster sends each rank its part of a batch's data before the batch runs)."""
    if _noted:
        for data in arrays:
            _noted.pop(id(data), None)

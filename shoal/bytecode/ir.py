"""Vector bytecode values: views, constants, instructions, base declarations and batches.

An instruction names its outputs and inputs as :class:`View` values (a window onto a base
array, in bytes) or :class:`Const` scalars. A :class:`Batch` is self-contained: it declares the
bases it creates and carries the data of arrays that came from Python, so any component (local,
remote, or on another rank) can run it.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass, field
from typing import Any, Union

import numpy as np

AttrValue = Union[None, bool, int, float, complex, str, np.dtype, tuple["AttrValue", ...]]  # noqa: UP007  (recursive alias)
Scalar = bool | int | float | complex | np.generic


@dataclass(frozen=True, slots=True)
class View:
    """A strided window onto base ``base``: ``offset`` and ``strides`` are in bytes."""

    base: int
    dtype: np.dtype
    offset: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        """The number of elements, as an exact Python int (never wraps around)."""
        return math.prod(map(int, self.shape))

    def byte_extent(self) -> tuple[int, int]:
        """The half-open byte range ``[low, high)`` of the base that this view touches, in exact
        Python ints; ``(offset, offset)`` for a view with an extent of 0."""
        offset = int(self.offset)
        if any(int(n) == 0 for n in self.shape):
            return (offset, offset)
        low = high = offset
        for n, s in zip(self.shape, self.strides):
            step = (int(n) - 1) * int(s)
            if step < 0:
                low += step
            else:
                high += step
        return (low, high + self.dtype.itemsize)

    def is_contiguous(self) -> bool:
        """True if the view is C-contiguous."""
        expected = self.dtype.itemsize
        for n, s in zip(reversed(self.shape), reversed(self.strides)):
            if n != 1 and s != expected:
                return False
            expected *= n
        return True


@functools.lru_cache(maxsize=4096)
def contiguous_strides(shape: tuple[int, ...], itemsize: int) -> tuple[int, ...]:
    """The byte strides of a C-contiguous array of ``shape`` (a loop asks for few shapes)."""
    strides = []
    step = itemsize
    for n in reversed(shape):
        strides.append(step)
        step *= max(n, 1)
    return tuple(reversed(strides))


def reordered(strides: tuple[int, ...]) -> bool:
    """True if some axis has a smaller stride than the next one: an axis order other than C's
    (``a.T``)."""
    return any(strides[axis] < strides[axis + 1] for axis in range(len(strides) - 1))


@dataclass(frozen=True, slots=True)
class Const:
    """A scalar operand. Python scalars are *weak* (NEP 50); NumPy scalars keep their dtype."""

    value: Scalar

    @property
    def weak(self) -> bool:
        return not isinstance(self.value, np.generic)


Operand = View | Const


@dataclass(frozen=True, slots=True)
class Instruction:
    """One operation: ``op`` names an entry of the opcode table."""

    op: str
    outputs: tuple[View, ...]
    inputs: tuple[Operand, ...]
    attrs: tuple[tuple[str, AttrValue], ...] = ()

    def attr(self, key: str, default: Any = None) -> Any:
        for name, value in self.attrs:
            if name == key:
                return value
        return default

    def attr_dict(self) -> dict[str, Any]:
        return dict(self.attrs)


def make_attrs(**attrs: AttrValue) -> tuple[tuple[str, AttrValue], ...]:
    """Attributes in canonical (sorted) order, so equal instructions compare and hash equal."""
    return tuple(sorted(attrs.items()))


@dataclass(frozen=True, slots=True)
class BaseDecl:
    """A base array created by a batch: ``size`` elements of ``dtype``."""

    id: int
    dtype: np.dtype
    size: int

    @property
    def nbytes(self) -> int:
        return int(self.size) * self.dtype.itemsize


@dataclass
class Batch:
    """A self-contained unit of work sent to a component.

    ``bases`` declares the bases created here, in order; ``data`` holds the initial contents of
    bases that came from Python (1-D, C-contiguous, the declared dtype and size);
    ``instructions`` run in order. A ``release`` instruction ends a base's life. ``donated`` names
    data arrays the producer hands over: a component may keep and write them instead of copying,
    and take them out of ``data`` while it runs (an in-process hint only; it does not travel on
    the wire). ``repeats``, if given, names per instruction an earlier one it repeats over other
    bases (-1: none), for verification (:func:`shoal.bytecode.verify`'s ``alike``; an in-process
    hint too).
    """

    bases: list[BaseDecl] = field(default_factory=list)
    data: dict[int, np.ndarray] = field(default_factory=dict)
    instructions: list[Instruction] = field(default_factory=list)
    donated: set[int] = field(default_factory=set)
    repeats: list[int] | None = None

    def __len__(self) -> int:
        return len(self.instructions)

    def is_empty(self) -> bool:
        return not (self.bases or self.data or self.instructions)

"""Base memory for the node engine: raw bytes per base, allocated on first use.

A base declared by a batch gets memory only when the first block operation that touches it is
about to run, and loses it when its release operation runs, so a batch that creates and drops
many arrays holds no more of them at once than the program itself would.
"""

from __future__ import annotations

import numpy as np

from shoal.bytecode import BaseDecl, View
from shoal.engine.component import EngineError


class Storage:
    """Live bases by id: their declarations and (once allocated) their bytes."""

    def __init__(self) -> None:
        self.decls: dict[int, BaseDecl] = {}
        self._bytes: dict[int, np.ndarray] = {}
        self._typed: dict[int, dict[str, np.ndarray]] = {}

    def declare(self, decl: BaseDecl, data: np.ndarray | None) -> None:
        if decl.id in self.decls:
            raise EngineError(f"base {decl.id} declared twice")
        if data is not None:
            if data.size != decl.size:
                raise EngineError(f"data for base {decl.id} has {data.size} elements, declared {decl.size}")
            self._bytes[decl.id] = np.array(data, dtype=decl.dtype, copy=True).reshape(decl.size).view(np.uint8)
        self.decls[decl.id] = decl

    def decl(self, base: int) -> BaseDecl:
        try:
            return self.decls[base]
        except KeyError:
            raise EngineError(f"base {base} is not live") from None

    def ensure(self, base: int) -> None:
        """Allocate ``base`` if it has no memory yet."""
        if base not in self._bytes:
            self._bytes[base] = np.empty(self.decl(base).nbytes, np.uint8)

    def raw(self, base: int) -> np.ndarray:
        try:
            return self._bytes[base]
        except KeyError:
            raise EngineError(f"base {base} is not live or has no memory") from None

    def typed(self, base: int, dtype: np.dtype) -> np.ndarray:
        """The base's bytes as a 1-D array of ``dtype`` (trailing bytes that do not fit dropped)."""
        per_base = self._typed.get(base)
        if per_base is None:
            per_base = self._typed[base] = {}
        array = per_base.get(dtype.str)
        if array is None:
            raw = self.raw(base)
            array = per_base[dtype.str] = raw[: raw.size - raw.size % dtype.itemsize].view(dtype)
        return array

    def array(self, view: View) -> np.ndarray:
        """The ndarray that ``view`` describes (allocating its base if needed)."""
        self.ensure(view.base)
        return np.ndarray(view.shape, view.dtype, buffer=self._bytes[view.base], offset=view.offset, strides=view.strides)

    def release(self, base: int) -> None:
        self.decls.pop(base, None)
        self._bytes.pop(base, None)
        self._typed.pop(base, None)

    def allocated(self) -> int:
        return len(self._bytes)

    def clear(self) -> None:
        self.decls.clear()
        self._bytes.clear()
        self._typed.clear()

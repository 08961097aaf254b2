"""The reference engine: runs each instruction with NumPy, one at a time, over whole views.

It is the oracle that every other component is tested against, so it favours plainness over
speed: every instruction goes through its opcode table entry's reference implementation.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View, spec
from shoal.engine.component import Component, EngineError, name_instruction


@dataclass(frozen=True)
class ReferenceConfig:
    """The reference engine has no settings."""


def view_of(buffer: np.ndarray, view: View) -> np.ndarray:
    """The ndarray that ``view`` describes over the raw bytes ``buffer`` of its base."""
    if 0 in view.shape:
        return np.empty(view.shape, view.dtype)
    return np.ndarray(view.shape, view.dtype, buffer=buffer, offset=view.offset, strides=view.strides)


class ReferenceEngine(Component):
    """Executes batches instruction by instruction with NumPy."""

    name = "reference"

    def __init__(self, config: ReferenceConfig | None = None) -> None:
        self.config = config or ReferenceConfig()
        self._bases: dict[int, np.ndarray] = {}
        self._declared: dict[int, BaseDecl] = {}

    @classmethod
    def configure(cls, environ: Mapping[str, str] | None = None) -> ReferenceConfig:
        return ReferenceConfig()

    def execute(self, batch: Batch) -> None:
        for decl in batch.bases:
            if decl.id in self._bases or decl.id in self._declared:
                raise EngineError(f"base {decl.id} declared twice")
            data = batch.data.get(decl.id)
            if data is None:
                self._declared[decl.id] = decl  # allocated when first used
            else:
                storage = np.array(data, dtype=decl.dtype, copy=True).reshape(decl.size)
                self._bases[decl.id] = storage.view(np.uint8)
        for index, instruction in enumerate(batch.instructions):
            try:
                self._run(instruction)
            except Exception as error:
                name_instruction(error, index, instruction)
                raise

    def _array(self, view: View) -> np.ndarray:
        buffer = self._bases.get(view.base)
        if buffer is None:
            decl = self._declared.pop(view.base, None)
            if decl is None:
                raise EngineError(f"base {view.base} is not live")
            buffer = self._bases[view.base] = np.empty(decl.size, decl.dtype).view(np.uint8)
        return view_of(buffer, view)

    def _operand(self, operand: View | Const):
        return operand.value if isinstance(operand, Const) else self._array(operand)

    def _run(self, instruction: Instruction) -> None:
        if instruction.op == "release":
            self._release(instruction.attr("base"))
            return
        entry = spec(instruction.op)
        outs = [self._array(view) for view in instruction.outputs]
        ins = [self._operand(operand) for operand in instruction.inputs]
        with np.errstate(all="ignore"):
            entry.reference(outs, ins, instruction.attr_dict())

    def fetch(self, view: View) -> np.ndarray:
        return self._array(view).copy()

    def _release(self, base: int) -> None:
        self._bases.pop(base, None)
        self._declared.pop(base, None)

    def shutdown(self) -> None:
        self._bases.clear()
        self._declared.clear()

    def live_bases(self) -> int:
        return len(self._bases) + len(self._declared)

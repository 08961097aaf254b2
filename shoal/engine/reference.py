"""The reference engine: runs each instruction with NumPy, one at a time, over whole views.

It is the oracle that every other component is tested against, so it favours plainness over
speed: every instruction goes through its opcode table entry's reference implementation. It
verifies every batch before touching memory (``ReferenceConfig.verify``; ``SHOAL_VERIFY_EXECUTE``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np

from shoal.bytecode import BaseDecl, Batch, Const, Instruction, VerifyLimits, View, spec, verify
from shoal.bytecode.boundary import VerifyAtExecute, execute_limits
from shoal.engine import fp_signals
from shoal.engine.component import Component, EngineError, name_instruction


@dataclass(frozen=True)
class ReferenceConfig:
    """``verify``: the limits every batch is verified with at ``execute`` (None: not verified)."""

    verify: VerifyLimits | None = field(default_factory=VerifyLimits)


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
        self._live: dict[int, BaseDecl] = {}
        self._verify = self.config.verify

    @classmethod
    def configure(cls, environ: Mapping[str, str] | None = None) -> ReferenceConfig:
        return ReferenceConfig(verify=execute_limits({}, VerifyAtExecute.ON, environ))

    def execute(self, batch: Batch) -> None:
        if self._verify is not None:
            verify(batch, self._live, limits=self._verify)
        for decl in batch.bases:
            if decl.id in self._bases or decl.id in self._declared:
                raise EngineError(f"base {decl.id} declared twice")
            self._live[decl.id] = decl
            data = batch.data.get(decl.id)
            if data is None:
                self._declared[decl.id] = decl  # allocated when first used
            elif decl.id in batch.donated and data.dtype == decl.dtype and data.flags.c_contiguous and data.flags.writeable:
                self._bases[decl.id] = data.reshape(decl.size).view(np.uint8)  # given away: kept, as the node engine keeps it
            else:
                storage = np.array(data, dtype=decl.dtype, copy=True).reshape(decl.size)
                self._bases[decl.id] = storage.view(np.uint8)
        with fp_signals.running(batch):
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
        with fp_signals.noting(instruction):
            entry.reference(outs, ins, instruction.attr_dict())

    def in_process(self) -> bool:
        return True

    def forked(self) -> Component:
        return self  # no threads: the child's copy of the bases is all it needs

    def fetch(self, view: View) -> np.ndarray:
        return self._array(view).copy()

    def memory(self, view: View, write: bool = False) -> np.ndarray | None:
        if view.base not in self._bases and view.base not in self._declared:
            return None
        return self._array(view)

    def _release(self, base: int) -> None:
        self._bases.pop(base, None)
        self._declared.pop(base, None)
        self._live.pop(base, None)

    def shutdown(self) -> None:
        self._bases.clear()
        self._declared.clear()
        self._live.clear()

    def live_bases(self) -> int:
        return len(self._bases) + len(self._declared)

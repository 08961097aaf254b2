"""Running an instruction over whole views (or a slab of them) with its opcode's reference
implementation, and a matrix product's row panel as one single-threaded BLAS call."""

from __future__ import annotations

import numpy as np

from shoal.bytecode import Const, Instruction, View, spec
from shoal.engine.node.run.storage import Storage


def run_panel(storage: Storage, a: View, b: View, out: View) -> None:
    """``out = a @ b`` on the views' memory, cast to ``out``'s dtype as NumPy's ``out=`` would."""
    left, right, target = storage.array(a), storage.array(b), storage.array(out)
    with np.errstate(all="ignore"):
        if target.dtype == np.result_type(left, right):
            np.matmul(left, right, out=target)
        else:
            np.copyto(target, np.matmul(left, right), casting="unsafe")


def run_whole(storage: Storage, instruction: Instruction) -> None:
    """Run ``instruction`` by its opcode's reference implementation on the views' memory."""
    outs = [storage.array(view) for view in instruction.outputs]
    ins = [storage.constant(operand) if isinstance(operand, Const) else storage.array(operand) for operand in instruction.inputs]
    with np.errstate(all="ignore"):
        spec(instruction.op).reference(outs, ins, instruction.attr_dict())

"""Running an instruction over whole views (or a slab of them) with its opcode's reference
implementation, and a matrix product's row panel as one single-threaded BLAS call."""

from __future__ import annotations

import numpy as np

from shoal.bytecode import Const, Instruction, View, spec
from shoal.engine import fp_signals
from shoal.engine.node.run.storage import Storage


def run_panel(storage: Storage, a: View, b: View, out: View, instruction: Instruction | None = None) -> None:
    """``out = a @ b`` on the views' memory, cast to ``out``'s dtype as NumPy's ``out=`` would;
    floating-point conditions are noted for ``instruction``."""
    left, right, target = storage.array(a), storage.array(b), storage.array(out)
    with fp_signals.noting(instruction):
        if target.dtype == np.result_type(left, right):
            np.matmul(left, right, out=target)
        else:
            np.copyto(target, np.matmul(left, right), casting="unsafe")


def run_lower_panel(storage: Storage, a: View, b: View, out: View, instruction: Instruction | None = None) -> None:
    """``out = a @ b`` for rows of a symmetric product up to its diagonal (``out``'s last
    columns are its square block on the diagonal), that block made exactly symmetric from its
    lower triangle, as NumPy's ``syrk`` leaves it."""
    run_panel(storage, a, b, out, instruction)
    target = storage.array(out)
    rows = target.shape[0]
    block = target[:, target.shape[1] - rows :]
    upper = np.triu_indices(rows, 1)
    block[upper] = block.T[upper]


def run_mirror(storage: Storage, upper: View, lower: View) -> None:
    """Copy the transpose of ``lower`` into ``upper`` (the other half of a symmetric product)."""
    np.copyto(storage.array(upper), storage.array(lower).T)


def run_whole(storage: Storage, instruction: Instruction) -> None:
    """Run ``instruction`` by its opcode's reference implementation on the views' memory."""
    outs = [storage.array(view) for view in instruction.outputs]
    ins = [storage.constant(operand) if isinstance(operand, Const) else storage.array(operand) for operand in instruction.inputs]
    with fp_signals.noting(instruction):
        spec(instruction.op).reference(outs, ins, instruction.attr_dict())

"""Small batches run directly: one NumPy call per instruction, as the reference engine does.

Planning, blocking and scheduling cost about a millisecond per batch in Python; a batch whose
whole work is a few million element operations takes NumPy about as long, so splitting it would
make Shoal slower than NumPy. Such batches run instruction by instruction over whole views.
"""

from __future__ import annotations

import math

import numpy as np

from shoal.bytecode import Batch, Const, View, spec
from shoal.engine.node.storage import Storage

DIRECT_WORK_ELEMENTS = 1 << 23


def batch_work(batch: Batch) -> int:
    """Element operations in ``batch``: each instruction counts its largest operand."""
    work = 0
    for instruction in batch.instructions:
        largest = 0
        for view in (*instruction.outputs, *instruction.inputs):
            if isinstance(view, View):
                largest = max(largest, math.prod(view.shape))
        work += largest
    return work


def run_direct(batch: Batch, storage: Storage) -> None:
    """Run ``batch``'s instructions in order over whole views."""
    for instruction in batch.instructions:
        if instruction.op == "release":
            storage.release(instruction.attr("base"))
            continue
        for view in instruction.outputs:
            storage.ensure(view.base)
            storage.make_writable(view.base)
        outs = [storage.array(view) for view in instruction.outputs]
        ins = [operand.value if isinstance(operand, Const) else storage.array(operand) for operand in instruction.inputs]
        with np.errstate(all="ignore"):
            spec(instruction.op).reference(outs, ins, instruction.attr_dict())

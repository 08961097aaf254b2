"""Small batches run directly: one NumPy call per instruction, as the reference engine does.

Planning, blocking and scheduling cost about a millisecond per batch in Python; a batch whose
whole work is a few million element operations takes NumPy about as long, so splitting it would
make Shoal slower than NumPy. Such batches run instruction by instruction over whole views.

So does a batch of many mid-sized instructions: planning and blocking cost about 150-200 µs
per instruction, which a batch whose instructions average fewer than ``direct_work / 16``
elements (2^19 by default) does not win back on two cores. lattice_boltzmann.py (500 x 250 x 9,
thousands of small copies from ``np.roll``) took 3.2-3.7 s blocked, 1.8-2.2 s direct and
1.8-2.1 s in NumPy; shallow_water.py (1022², 200 K elements per instruction) 3.5-3.9 s blocked,
2.0-2.2 s direct and 4.0-4.2 s in NumPy.
"""

from __future__ import annotations

import math

import numpy as np

from shoal.bytecode import Batch, Const, View, spec
from shoal.engine.node.storage import Storage
from shoal.engine.node.tiles import where_in_place

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


def runs_direct(batch: Batch, direct_work: int) -> bool:
    """True if ``batch`` should run instruction by instruction (``direct_work`` 0: never)."""
    work = batch_work(batch)
    if work < direct_work:
        return True
    instructions = sum(1 for instruction in batch.instructions if instruction.op != "release")
    return work < instructions * (direct_work // 16)


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
            if instruction.op == "where" and _selects_in_place(outs[0], ins):
                where_in_place(outs, ins, None)
            else:
                spec(instruction.op).reference(outs, ins, instruction.attr_dict())


def _selects_in_place(out: np.ndarray, ins: list) -> bool:
    """True if ``where`` may write ``out`` directly: a boolean condition, no operand in ``out``'s
    memory and the operands' common dtype is ``out``'s (so no selected value is cast twice)."""
    condition, x, y = ins
    if not isinstance(condition, np.ndarray) or condition.dtype != np.bool_:
        return False
    if any(isinstance(v, np.ndarray) and np.may_share_memory(out, v) for v in ins):
        return False
    try:
        common = np.result_type(*(v.dtype if isinstance(v, np.ndarray) else v for v in (x, y)))
    except (TypeError, ValueError, OverflowError):
        return False
    return common == out.dtype

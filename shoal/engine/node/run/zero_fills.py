"""Zero fills of new bases dropped: the base gets zeroed memory when it is allocated.

NumPy's ``np.zeros`` takes its memory from ``calloc``, whose fresh pages are zero without being
written; a recorded ``fill`` of a new base with zero would write every byte once more. A batch's
``fill`` that writes all of a base declared in the same batch (without data) with a value whose
bytes in the base's dtype are all zero, before any other instruction touches the base, is taken
out of the batch, and the storage allocates that base zeroed (``Storage.zero_on_allocation``):
fresh memory from ``np.zeros``, or a reused spare buffer filled with zeros (a spare is not zero).
Object dtypes keep their fill (zero bytes are null references, not the integer 0), and so does
negative zero (its sign bit is set).
"""

from __future__ import annotations

import warnings

import numpy as np

from shoal.bytecode import Batch, Const, Instruction, View
from shoal.engine.node.run.storage import Storage


def drop_zero_fills(batch: Batch, storage: Storage) -> Batch:
    """``batch`` without the zero fills of its new bases, which ``storage`` allocates zeroed; the
    batch itself if there are none."""
    fills = [index for index, instruction in enumerate(batch.instructions) if instruction.op == "fill"]
    if not fills:
        return batch
    fresh = {decl.id: decl for decl in batch.bases if decl.id not in batch.data}
    dropped: set[int] = set()
    for index in fills:
        instruction = batch.instructions[index]
        out = instruction.outputs[0]
        decl = fresh.get(out.base)
        if decl is None or not _whole(out, decl.dtype, decl.size) or not _zero_bytes(instruction, out.dtype):
            continue
        if any(_touches(earlier, out.base) for earlier in batch.instructions[:index]):
            continue
        dropped.add(index)
        storage.zero_on_allocation(out.base)
    if not dropped:
        return batch
    kept = [instruction for index, instruction in enumerate(batch.instructions) if index not in dropped]
    return Batch(bases=batch.bases, data=batch.data, instructions=kept, donated=batch.donated)


def _whole(view: View, dtype: np.dtype, size: int) -> bool:
    if view.offset != 0 or view.dtype != dtype or view.size != size:
        return False
    step = dtype.itemsize
    for extent, stride in zip(reversed(view.shape), reversed(view.strides)):
        if extent != 1 and stride != step:
            return False
        step *= extent
    return True


def _zero_bytes(instruction: Instruction, dtype: np.dtype) -> bool:
    """True if the fill's value, cast to ``dtype``, is all zero bytes (never for object dtypes)."""
    value = instruction.inputs[0] if instruction.inputs else None
    if not isinstance(value, Const) or dtype.hasobject:
        return False
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            cast = np.array(value.value, dtype=dtype)
    except (TypeError, ValueError, OverflowError):
        return False
    return not any(cast.tobytes())


def _touches(instruction: Instruction, base: int) -> bool:
    if instruction.op == "release":
        return bool(instruction.attr("base") == base)
    if any(view.base == base for view in instruction.outputs):
        return True
    return any(isinstance(operand, View) and operand.base == base for operand in instruction.inputs)

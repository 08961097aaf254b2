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

import numpy as np

from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View
from shoal.engine.node.run.storage import Storage


def drop_zero_fills(batch: Batch, storage: Storage) -> Batch:
    """``batch`` without the zero fills of its new bases, which ``storage`` allocates zeroed; the
    batch itself if there are none (or if it is malformed: the verifier then reports it as sent)."""
    try:
        dropped = _zero_fills(batch)
    except (AttributeError, TypeError, IndexError, KeyError, ValueError):
        return batch
    if not dropped:
        return batch
    for base in dropped.values():
        storage.zero_on_allocation(base)
    kept = [instruction for index, instruction in enumerate(batch.instructions) if index not in dropped]
    return Batch(bases=batch.bases, data=batch.data, instructions=kept, donated=batch.donated)


def _zero_fills(batch: Batch) -> dict[int, int]:
    """The positions of the fills to drop, with the bases they fill."""
    fills = [index for index, instruction in enumerate(batch.instructions) if isinstance(instruction, Instruction) and instruction.op == "fill"]
    if not fills:
        return {}
    fresh = {decl.id: decl for decl in batch.bases if isinstance(decl, BaseDecl) and decl.id not in batch.data}
    dropped: dict[int, int] = {}
    for index in fills:
        instruction = batch.instructions[index]
        if len(instruction.outputs) != 1 or not isinstance(instruction.outputs[0], View):
            continue
        out = instruction.outputs[0]
        decl = fresh.get(out.base)
        if decl is None or out.base in dropped.values() or not _whole(out, decl.dtype, decl.size) or not _zero_bytes(instruction, out.dtype):
            continue
        if any(_touches(earlier, out.base) for earlier in batch.instructions[:index]):
            continue
        dropped[index] = out.base
    return dropped


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
    scalar = value.value
    if isinstance(scalar, np.generic) and scalar.dtype == dtype:
        cast = np.asarray(scalar)
    else:
        try:
            with np.errstate(all="ignore"):  # not ``warnings.catch_warnings``: it resets "once" filters
                cast = np.array(scalar, dtype=dtype)
        except (TypeError, ValueError, OverflowError):
            return False
    return not any(cast.tobytes())


def _touches(instruction: Instruction, base: int) -> bool:
    if not isinstance(instruction, Instruction):
        return True
    if instruction.op == "release":
        return bool(instruction.attr("base") == base)
    if any(view.base == base for view in instruction.outputs):
        return True
    return any(isinstance(operand, View) and operand.base == base for operand in instruction.inputs)

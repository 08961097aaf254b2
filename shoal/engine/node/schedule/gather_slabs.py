"""A gather along the first axis, split into slabs along the second axis on the pool.

``populations[OPPOSITE]`` (lattice_boltzmann.py, (9, 512, 1024) float64) ran as one whole-view
operation on one thread: NumPy builds the 37 MB result and the engine copies it into its base,
while the other thread waits for it. Slab ``r0:r1`` of the result is the gather of slab
``r0:r1`` of the source with the same index array, so each slab is an independent block
operation through the opcode's own reference (its temporary is slab-sized).
"""

from __future__ import annotations

import math
from functools import partial

from shoal.bytecode import Instruction, View
from shoal.engine.blocks.dependencies import BlockOp
from shoal.engine.node.run.whole import run_whole
from shoal.engine.node.schedule.context import BuildContext

SLAB_ELEMENTS_MIN = 16384
SLABS_PER_THREAD = 4


def gather_slabs(context: BuildContext, instruction: Instruction) -> bool:
    """Add ``instruction`` as slabs if it gathers whole rows along axis 0; False otherwise."""
    if instruction.op != "gather" or context.threads <= 1 or instruction.attr("key") != (("array", 0),):
        return False
    if len(instruction.inputs) != 2:
        return False
    source, index = instruction.inputs
    out = instruction.outputs[0]
    if not (isinstance(source, View) and isinstance(index, View)) or source.ndim < 2 or index.ndim != 1:
        return False
    if out.shape != (index.shape[0], *source.shape[1:]) or out.base in (source.base, index.base):
        return False
    rows = source.shape[1]
    per_row = math.prod(source.shape) // max(rows, 1)
    slab = max(1, -(-rows // (SLABS_PER_THREAD * context.threads)), -(-SLAB_ELEMENTS_MIN // max(per_row, 1)))
    if slab >= rows:
        return False
    index_blocks = tuple(context.view_blocks(index))
    origin = context.origin((instruction,))
    ops = []
    for start in range(0, rows, slab):
        stop = min(start + slab, rows)
        piece, target = _rows(source, start, stop), _rows(out, start, stop)
        run = partial(run_whole, context.storage, Instruction("gather", (target,), (piece, index), instruction.attrs))
        reads = tuple(context.view_blocks(piece)) + index_blocks
        bases = (source.base, index.base, out.base)
        ops.append(BlockOp(context.next_seq(), run, reads, tuple(context.view_blocks(target)), bases, (out.base,), label="gather slab", origin=origin))
    context.deps.insert_group(ops)
    context.counts.axis_panels += len(ops)
    return True


def _rows(view: View, start: int, stop: int) -> View:
    """``view[:, start:stop]``."""
    shape = (view.shape[0], stop - start, *view.shape[2:])
    return View(view.base, view.dtype, view.offset + start * view.strides[1], shape, view.strides)

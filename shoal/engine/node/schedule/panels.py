"""Whole-view instructions split into independent panels on the pool.

A 2-D matrix product becomes row panels, each a one-thread BLAS call; a reduction or scan along
some axes becomes slabs along the first axis it keeps, each run by the opcode's reference
implementation. Instructions that do not fit run whole (the functions return False).
"""

from __future__ import annotations

import math
from functools import partial
from itertools import pairwise

from shoal.bytecode import Instruction, Kind, View, spec
from shoal.engine import fp_signals
from shoal.engine.blocks.dependencies import BlockOp
from shoal.engine.node.run.whole import run_lower_panel, run_mirror, run_panel, run_whole
from shoal.engine.node.schedule.context import MIN_VIEW_BLOCK_ELEMENTS, BuildContext

PANEL_ROWS_MIN = 64


def row_panels(context: BuildContext, instruction: Instruction) -> bool:
    """A 2-D product as row panels on the pool, each a one-thread BLAS call.

    Measured faster than one call to threaded BLAS (2048², 2 cores: 0.31-0.34 s against
    0.35-0.45 s); products that do not fit the pattern run whole.
    """
    if instruction.op not in ("matmul", "dot") or context.threads <= 1:
        return False
    out = instruction.outputs[0]
    a, b = instruction.inputs
    if not (isinstance(a, View) and isinstance(b, View)) or a.ndim != 2 or b.ndim != 2 or out.ndim != 2:
        return False
    if out.base in (a.base, b.base) or a.shape[0] < 2 * PANEL_ROWS_MIN:
        return False
    if _symmetric(a, b, out):
        _symmetric_panels(context, instruction, a, b, out)
        return True
    rows = max(PANEL_ROWS_MIN, -(-a.shape[0] // (4 * context.threads)))
    b_blocks = tuple(context.view_blocks(b))
    origin = context.origin((instruction,))
    ops = []
    for start in range(0, a.shape[0], rows):
        stop = min(start + rows, a.shape[0])
        a_panel = _block(a, start, 0, stop - start, a.shape[1])
        out_panel = _block(out, start, 0, stop - start, out.shape[1])
        run = partial(run_panel, context.storage, a_panel, b, out_panel, instruction)
        reads = tuple(context.view_blocks(a_panel)) + b_blocks
        ops.append(BlockOp(context.next_seq(), run, reads, tuple(context.view_blocks(out_panel)), (a.base, b.base, out.base), (out.base,), label="panel", origin=origin))
    context.deps.insert_group(ops)
    context.counts.product_panels += len(ops)
    return True


def _block(view: View, row: int, column: int, rows: int, columns: int) -> View:
    """The ``rows`` x ``columns`` block of 2-D ``view`` from element (``row``, ``column``)."""
    return View(view.base, view.dtype, view.offset + row * view.strides[0] + column * view.strides[1], (rows, columns), view.strides)


def _symmetric(a: View, b: View, out: View) -> bool:
    """True if ``a @ b`` is ``x @ x.T`` (or ``x.T @ x``): ``b`` shows ``a``'s elements transposed,
    a product NumPy computes as one triangle (BLAS ``syrk``) and mirrors."""
    return (
        a.base == b.base
        and a.offset == b.offset
        and b.shape == a.shape[::-1]
        and b.strides == a.strides[::-1]
        and a.dtype == b.dtype == out.dtype
        and a.dtype.kind == "f"
    )


def _symmetric_panels(context: BuildContext, instruction: Instruction, a: View, b: View, out: View) -> None:
    """``out = a @ a.T`` as row panels that compute the lower triangle only (each a one-thread
    BLAS call over the columns up to its last row; boundaries give every panel the same work),
    then copies of each panel's upper part from the transposed lower part below it: half the
    multiplications, and a result as exactly symmetric as NumPy's."""
    rows = a.shape[0]
    count = max(1, min(4 * context.threads, rows // PANEL_ROWS_MIN))
    bounds = sorted({0, rows, *(round(rows * math.sqrt(k / count)) for k in range(1, count))})
    origin = context.origin((instruction,))
    ops = []
    for start, stop in reversed(list(pairwise(bounds))):  # the largest first
        a_panel = _block(a, start, 0, stop - start, a.shape[1])
        b_columns = _block(b, 0, 0, b.shape[0], stop)
        out_panel = _block(out, start, 0, stop - start, stop)
        run = partial(run_lower_panel, context.storage, a_panel, b_columns, out_panel, instruction)
        reads = tuple(context.view_blocks(a_panel)) + tuple(context.view_blocks(b_columns))
        ops.append(BlockOp(context.next_seq(), run, reads, tuple(context.view_blocks(out_panel)), (a.base, out.base), (out.base,), label="panel", origin=origin))
    mirrors = []
    for start, stop in pairwise(bounds):
        if stop == rows:
            continue
        upper = _block(out, start, stop, stop - start, rows - stop)
        lower = _block(out, stop, start, rows - stop, stop - start)
        run = partial(run_mirror, context.storage, upper, lower)
        mirrors.append(BlockOp(context.next_seq(), run, tuple(context.view_blocks(lower)), tuple(context.view_blocks(upper)), (out.base,), (out.base,), label="mirror", origin=origin))
    context.deps.insert_group(ops)
    context.deps.insert_group(mirrors, after=ops)  # each reads the lower parts of the panels below
    context.counts.product_panels += len(ops) + len(mirrors)


def axis_panels(context: BuildContext, instruction: Instruction) -> bool:
    """A reduction or scan along some axes, split along the first axis it keeps.

    Each panel runs the opcode's reference implementation on a slab of the input and the
    matching slab of the output, so ``np.sum(f, axis=0)`` over a (9, ny, nx) array runs as
    row slabs of ``ny`` on every thread.
    """
    kind = spec(instruction.op).kind
    if kind not in (Kind.REDUCTION, Kind.SCAN) or context.threads <= 1 or len(instruction.inputs) != 1:
        return False
    source, out = instruction.inputs[0], instruction.outputs[0]
    axis = instruction.attr("axis")
    if not isinstance(source, View) or axis is None or source.ndim < 2 or out.base == source.base:
        return False
    reduced = {a % source.ndim for a in (axis if isinstance(axis, tuple) else (axis,))}
    kept = [a for a in range(source.ndim) if a not in reduced]
    if not kept:
        return False
    split = kept[0]
    if kind is Kind.SCAN or instruction.attr("keepdims", False):
        out_axis = split
    else:
        out_axis = 0
    rows = source.shape[split]
    per_row = math.prod(source.shape) // max(rows, 1)
    smallest = min(context.block_elements, MIN_VIEW_BLOCK_ELEMENTS)
    panel = max(1, -(-rows // (4 * context.threads)), -(-smallest // max(per_row, 1)))
    if panel >= rows:
        return False
    origin = context.origin((instruction,))
    ops = []
    for start in range(0, rows, panel):
        stop = min(start + panel, rows)
        piece = _slab(source, split, start, stop)
        target = _slab(out, out_axis, start, stop)
        run = partial(run_whole, context.storage, fp_signals.derived(Instruction(instruction.op, (target,), (piece,), instruction.attrs), instruction))
        reads, writes = tuple(context.view_blocks(piece)), tuple(context.view_blocks(target))
        ops.append(BlockOp(context.next_seq(), run, reads, writes, (source.base, out.base), (out.base,), label="slab", origin=origin))
    context.deps.insert_group(ops)
    context.counts.axis_panels += len(ops)
    return True


def _slab(view: View, axis: int, start: int, stop: int) -> View:
    """``view`` restricted to ``start:stop`` along ``axis``."""
    shape = (*view.shape[:axis], stop - start, *view.shape[axis + 1 :])
    return View(view.base, view.dtype, view.offset + start * view.strides[axis], shape, view.strides)

"""Small batches run directly: one NumPy call per instruction, as the reference engine does.

Planning, blocking and scheduling cost about a millisecond per batch in Python; a batch whose
whole work is a few million element operations takes NumPy about as long, so splitting it would
make Shoal slower than NumPy. Such batches run instruction by instruction over whole views.

So does a batch of many mid-sized instructions: planning and blocking cost about 150-200 µs
per instruction, which a batch whose instructions average fewer than ``direct_work / 16``
elements (2^19 by default) does not win back on two cores. lattice_boltzmann.py (500 x 250 x 9,
thousands of small copies from ``np.roll``) took 3.2-3.7 s blocked, 1.8-2.2 s direct and
1.8-2.1 s in NumPy. At 10^6 elements per instruction blocks win once their kernels are compiled
(kernel cache warm; NumPy, direct, blocked, medians of 3): mandelbrot 1024², 30 iterations
0.23, 0.36, 0.17 s; Jacobi 1000², 30 sweeps 0.095, 0.116, 0.055 s; Black-Scholes 10^6, 30 days
1.75, 1.93, 0.55 s; shallow water 1000², 30 steps 2.83, 2.06, 0.55 s. Before any kernel is
compiled (empty cache) the two are close and both can trail NumPy: Jacobi 0.08, 0.09-0.11,
0.13-0.17 s; Black-Scholes 1.8, 2.0-2.2, 2.1-2.3 s; mandelbrot 0.31, 0.35-0.40, 0.26 s.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from shoal.bytecode import Batch, Const, Instruction, Kind, View, contiguous_strides, spec
from shoal.engine import fp_signals
from shoal.engine.blocks.thread_pool import WorkerPool
from shoal.engine.component import name_instruction
from shoal.engine.node.run.chunked_pairs import pair_work, run_chunked_pair
from shoal.engine.node.run.row_parts import (
    CALL_SHARE,
    independent,
    rows_of,
    run_shares,
    shares,
    sharing,
)
from shoal.engine.node.run.storage import Storage
from shoal.engine.node.run.tiles import where_in_place
from shoal.settings import DIRECT_WORK

DIRECT_WORK_ELEMENTS: int = DIRECT_WORK.default
HAND_OVER_MIN = 1 << 12  # elements below which a new base's own allocation is as cheap as a hand-over


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
    """True if ``batch`` should run instruction by instruction (``direct_work`` 0: never); the
    work of pairs the C loop takes does not count (``chunked_pairs.pair_work``, read only for a
    batch that would otherwise go to blocks)."""
    work = batch_work(batch)
    instructions = sum(1 for instruction in batch.instructions if instruction.op != "release")
    if _small(work, instructions, direct_work):
        return True
    return _small(work - pair_work(batch), instructions, direct_work)


def _small(work: int, instructions: int, direct_work: int) -> bool:
    """True if ``work`` element operations over ``instructions`` are cheaper run directly: under
    ``direct_work`` in all, or under ``direct_work / 16`` an instruction."""
    return work < direct_work or work < instructions * (direct_work // 16)


def run_direct(batch: Batch, storage: Storage, pool: WorkerPool | None = None) -> None:
    """Run ``batch``'s instructions in order over whole views.

    An element-wise instruction that fills a new base in place of an operand released right after
    it writes into that operand's memory, as NumPy does with temporaries it elides: ``(a + b) + c``
    makes one temporary, not two. A temporary that only the next instruction reads is made a
    chunk at a time (``chunked_pairs.py``). With a ``pool``, a large element-wise call's rows are
    shared among its threads (``row_parts.py``).

    An instruction that raises does not stop the batch: the instructions after it that read no
    base a failed instruction wrote (or one that read it) still run, since a component above may
    have put work recorded before the failed one after it (a cluster rank's computations that
    waited for a message); the first error is raised at the end.
    """
    instructions = batch.instructions
    skip = 0
    first: Exception | None = None
    spoiled: set[int] = set()  # bases a failed instruction, or one reading its output, wrote
    for index, instruction in enumerate(instructions):
        if skip:
            skip -= 1
            continue
        if instruction.op == "release":
            storage.release(instruction.attr("base"))
            continue
        if spoiled and any(getattr(operand, "base", None) in spoiled for operand in instruction.inputs):
            spoiled.update(view.base for view in instruction.outputs)
            continue
        try:
            skip = _run_one(instructions, index, storage, pool)
        except Exception as error:
            first = first or error
            spoiled.update(view.base for view in instruction.outputs)
    if first is not None:
        raise first


def _run_one(instructions: list[Instruction], index: int, storage: Storage, pool: WorkerPool | None) -> int:
    """Run instruction ``index`` (with the next one, if they run as a chunked pair); returns how
    many of the instructions after it that ran with it."""
    instruction = instructions[index]
    paired = run_chunked_pair(instructions, index, storage, pool)
    if paired:
        return paired - 1  # the releases between the pair and its second instruction
    dying = _dying_operand(instructions, index, storage)
    ins = [operand.value if isinstance(operand, Const) else storage.array(operand) for operand in instruction.inputs]
    if dying is not None:
        storage.hand_over(dying, instruction.outputs[0].base)
    pool = sharing(pool, storage, instruction.outputs[0].base) if instruction.outputs else None
    for view in instruction.outputs:
        storage.ensure(view.base)
        storage.make_writable(view.base)
    outs = [storage.array(view) for view in instruction.outputs]
    try:
        if instruction.op == "where" and _selects_in_place(outs[0], ins):
            with fp_signals.noting(instruction):
                where_in_place(outs, ins, None)
        else:
            _call(instruction, outs, ins, pool)
    except Exception as error:
        name_instruction(error, index, instruction)
        raise
    return 0


def _call(instruction: Instruction, outs: list[np.ndarray], ins: list, pool: WorkerPool | None) -> None:
    """``instruction``'s NumPy call, its rows shared among ``pool``'s threads where it is a large
    element-wise call whose rows are independent."""
    entry = spec(instruction.op)
    reference = entry.reference
    attrs = instruction.attr_dict()
    ranges = shares(pool, outs[0].shape, CALL_SHARE) if len(outs) == 1 and entry.kind is Kind.ELEMENTWISE and entry.ufunc is not None else []
    if len(ranges) < 2 or not independent(outs[0], (), ins):
        with fp_signals.noting(instruction):
            reference(outs, ins, attrs)
        return
    ndim = outs[0].ndim

    def run(start: int, stop: int) -> None:
        with fp_signals.noting(instruction):
            reference([outs[0][start:stop]], [rows_of(value, ndim, start, stop) for value in ins], attrs)

    run_shares(pool, ranges, run)


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


def _geometry(view: View) -> tuple:
    return view.dtype, view.offset, view.shape, view.strides


def _dying_operand(instructions: Sequence[Instruction], index: int, storage: Storage) -> int | None:
    """A base whose memory instruction ``index`` may write its result into, or None.

    That is an operand of an element-wise instruction that writes the whole of a new base through
    the same geometry (so every element is read just before it is overwritten), owned by the engine,
    of the same byte size, and released by the releases that directly follow the instruction.
    """
    instruction = instructions[index]
    operation = spec(instruction.op)
    if operation.kind is not Kind.ELEMENTWISE or operation.ufunc is None or len(instruction.outputs) != 1:
        return None
    out = instruction.outputs[0]
    if out.size < HAND_OVER_MIN or storage.has_memory(out.base):
        return None
    decl = storage.decl(out.base)
    if out.offset != 0 or out.dtype != decl.dtype or out.size != decl.size or out.strides != contiguous_strides(out.shape, out.dtype.itemsize):
        return None
    released = set()
    for position in range(index + 1, len(instructions)):
        later = instructions[position]
        if later.op != "release":
            break
        released.add(later.attr("base"))
    views = [operand for operand in instruction.inputs if isinstance(operand, View)]
    if any(view.base == out.base for view in views):
        return None
    for view in views:
        base = view.base
        if base not in released or not storage.owns(base) or storage.raw(base).nbytes != decl.nbytes:
            continue
        if all(_geometry(other) == _geometry(out) for other in views if other.base == base):
            return base
    return None

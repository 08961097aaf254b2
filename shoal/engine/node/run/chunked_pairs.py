"""A temporary between two element-wise instructions of a direct batch, made a chunk at a time.

``a[:, k + 1:] -= np.outer(q, r)`` records a product into a new base and a subtraction that
reads it, then the new base's release: NumPy's way, the batch writes the whole temporary (8 MB
at 1000 x 1000) and reads it back. Run chunk by chunk of rows instead, the temporary is a buffer
of :data:`CHUNK_ELEMENTS` elements that stays in cache: the first instruction fills it for some
rows, the second reads it for the same rows, and the temporary's base never gets memory. Each
element goes through the same NumPy loops with the same operands, so results are bit for bit
the whole calls'; NumPy's messages are noted for the instruction whose call made them, once each
as NumPy's one call reports them.

Not where the second instruction fills a new base laid out as the temporary: that base takes the
temporary's memory (``direct.py``'s hand-over) and the second call runs in place on the first's
result, as NumPy's elided temporary does; with the arrays in the last-level cache, as a direct
batch's are, that is the faster of the two.

The temporary's release usually follows in the same batch. Where it does not (a NumPy view of a
held base updated in place runs its batch before the statement ends, while the temporary is
still alive), the pair still runs in chunks if the first instruction's operands are small
against its result (``np.outer``'s vectors): copies of them are kept, and the temporary is
computed whole from them only if something reads it later (``Storage.defer``). Where the program
reads most such temporaries again, they are made whole as before (``Storage.deferring_pays``).

Releases between the two (of the first one's operands) run after the pair. A pair is run so
only where chunk order cannot matter: the second instruction's output must not
overlap any operand of the first, nor any of its own other operands unless it is that very view
(``a -= t`` in place).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from shoal.bytecode import Batch, Const, Instruction, Kind, View, spec
from shoal.engine import fp_signals
from shoal.engine.blocks.thread_pool import WorkerPool
from shoal.engine.component import name_instruction
from shoal.engine.fp_signals import NumpyLog, category, logging_state, named
from shoal.engine.node.run import compiled_pairs
from shoal.engine.node.run.row_parts import (
    NUMERIC,
    PAIR_SHARE,
    independent,
    rows_of,
    run_shares,
    shares,
    sharing,
)
from shoal.engine.node.run.storage import Storage
from shoal.engine.node.run.zero_fills import whole_base

CHUNK_ELEMENTS = 1 << 16  # a temporary's chunk: 512 KiB of float64, inside the 1 MiB L2
MIN_ELEMENTS = 1 << 17  # below this the whole calls are as fast: no chunking
RECOMPUTE_SHARE = 8  # a live temporary's operands, copied to compute it again, hold 1/8 of it at most


def run_chunked_pair(instructions: Sequence[Instruction], index: int, storage: Storage, pool: WorkerPool | None = None) -> int:
    """Run instruction ``index`` and the next one that is not a release chunk by chunk if they
    are such a pair, and the releases between them after it: how many instructions that was
    (0: none, nothing run). The temporary's own release must follow the pair, among releases.
    With a ``pool``, a large pair's rows are shared among its threads."""
    first = instructions[index]
    if not _element_wise(first):
        return 0
    temporary = first.outputs[0]
    if temporary.size < MIN_ELEMENTS:  # the pair's output has the temporary's shape
        return 0
    second_at = _after_releases(instructions, index + 1)
    if second_at >= len(instructions) or not _element_wise(instructions[second_at]):
        return 0
    second = instructions[second_at]
    between = [instruction.attr("base") for instruction in instructions[index + 1 : second_at]]
    used = {operand.base for operand in (*second.inputs, *second.outputs) if isinstance(operand, View)}
    if temporary.base in between or used & set(between) or storage.has_memory(temporary.base):
        return 0
    released = _released_next(instructions, second_at + 1, temporary.base)
    if not released and not (_recomputable(first) and storage.deferring_pays()):
        return 0
    out = second.outputs[0]
    shape = out.shape
    if temporary.shape != shape or len(shape) == 0 or shape[0] < 2:  # its size was checked first
        return 0
    if not whole_base(temporary, storage.decl(temporary.base)) or out.base == temporary.base:
        return 0
    if _takes_over(temporary, out, storage):
        return 0
    reads = [operand for operand in second.inputs if isinstance(operand, View) and operand.base == temporary.base]
    if not reads or any(view != temporary for view in reads):
        return 0
    pool = sharing(pool, storage, out.base)
    storage.ensure(out.base)
    storage.make_writable(out.base)  # first: operands of its base read its own memory, as the writes will
    target = storage.array(out)
    first_ins = [_value(operand, storage) for operand in first.inputs]
    second_ins = [None if isinstance(operand, View) and operand.base == temporary.base else _value(operand, storage) for operand in second.inputs]
    if not independent(target, first_ins, second_ins):
        return 0
    step = max(1, CHUNK_ELEMENTS // max(1, math.prod(shape[1:])))
    _run(first, second, (index, second_at), first_ins, second_ins, target, step, pool)
    if not released:  # still named by the program: kept as the means to compute it again
        copies = [np.array(value, copy=True) if isinstance(value, np.ndarray) else value for value in first_ins]
        storage.defer(temporary, _filling(first, copies))
    for base in between:
        storage.release(base)
    return second_at - index + 1


def pair_work(batch: Batch) -> int:
    """Element operations of ``batch`` in pairs the C loop will likely take (both instructions'
    outputs): such a pair into memory that exists streams it once on the engine's threads, as a
    fused block kernel would, without planning or blocks. LU at 4000², 20 columns: 0.35-0.58 s
    run direct against 0.89-0.93 s in blocks (NumPy 0.97-1.5 s). Read from the batch alone
    (``compiled_pairs.covers``): a new temporary of at least :data:`MIN_ELEMENTS`, read only as
    itself by the next instruction, which writes memory that exists (not a new base), and then
    released or, its operands small, read no more in the batch; and no other large instruction
    in the batch (0 otherwise: blocks fuse that work with the pairs, which won where measured:
    FDTD 1000², rank-one updates 1000² ran 1.46x and 0.98x NumPy's time direct against 0.77x and
    0.30x in blocks)."""
    declared = {decl.id for decl in batch.bases}
    instructions = batch.instructions
    work = 0
    paired: set[int] = set()
    for index, first in enumerate(instructions):
        temporary = first.outputs[0] if first.outputs else None
        if not isinstance(temporary, View) or temporary.base not in declared or temporary.base in batch.data or temporary.size < MIN_ELEMENTS:
            continue
        second_at = _after_releases(instructions, index + 1)
        if second_at >= len(instructions) or not compiled_pairs.covers(first, instructions[second_at], temporary):
            continue
        second = instructions[second_at]
        out = second.outputs[0]
        reads = [operand for operand in second.inputs if isinstance(operand, View) and operand.base == temporary.base]
        if (out.base in declared and out.base not in batch.data) or out.shape != temporary.shape or len(reads) != 1 or reads[0] != temporary:
            continue
        if _released_next(instructions, second_at + 1, temporary.base) or (_recomputable(first) and not _read_after(instructions, second_at + 1, temporary.base)):
            work += 2 * temporary.size
            paired.update((index, second_at))
    for index, instruction in enumerate(instructions):
        if index not in paired and any(isinstance(view, View) and view.size >= MIN_ELEMENTS for view in (*instruction.inputs, *instruction.outputs)):
            return 0
    return work


def _after_releases(instructions: Sequence[Instruction], start: int) -> int:
    """The position of the first instruction from ``start`` on that is not a release (the
    length of ``instructions`` if there is none)."""
    while start < len(instructions) and instructions[start].op == "release":
        start += 1
    return start


def _read_after(instructions: Sequence[Instruction], start: int, base: int) -> bool:
    return any(isinstance(operand, View) and operand.base == base for instruction in instructions[start:] for operand in (*instruction.inputs, *instruction.outputs))


def _takes_over(temporary: View, out: View, storage: Storage) -> bool:
    """True if ``out`` is a new base that can take over the temporary's memory (``direct.py``'s
    hand-over): the pair then runs as NumPy runs ``x * y + z`` with its temporary elided, the
    second call in place on the first's result. That beats chunks wherever the arrays stay in
    the last-level cache, as a direct batch's do (``docs/decisions.md``)."""
    if storage.has_memory(out.base):
        return False
    return whole_base(out, storage.decl(out.base)) and (out.dtype, out.shape, out.strides) == (temporary.dtype, temporary.shape, temporary.strides)


def _recomputable(first: Instruction) -> bool:
    """True if ``first``'s result may be kept as copies of its operands: they hold at most
    :data:`RECOMPUTE_SHARE` of its elements (``np.outer``'s two vectors for its matrix)."""
    operands = sum(operand.size for operand in first.inputs if isinstance(operand, View))
    return operands * RECOMPUTE_SHARE <= first.outputs[0].size


def _filling(first: Instruction, operands: list[Any]) -> Callable[[np.ndarray], None]:
    """What computes ``first``'s whole result again from ``operands`` (its NumPy messages were
    noted when the pair ran)."""
    call, attrs = spec(first.op).reference, first.attr_dict()

    def fill(out: np.ndarray) -> None:
        with np.errstate(all="ignore"):
            call([out], operands, attrs)

    return fill


def _released_next(instructions: Sequence[Instruction], start: int, base: int) -> bool:
    """True if ``base`` is released among the releases from position ``start`` on."""
    for instruction in instructions[start:]:
        if instruction.op != "release":
            return False
        if instruction.attr("base") == base:
            return True
    return False


def _element_wise(instruction: Instruction) -> bool:
    entry = spec(instruction.op)
    return entry.kind is Kind.ELEMENTWISE and entry.ufunc is not None and len(instruction.outputs) == 1 and instruction.outputs[0].dtype.kind in NUMERIC


def _value(operand: Any, storage: Storage) -> Any:
    return operand.value if isinstance(operand, Const) else storage.array(operand)


def _run(
    first: Instruction,
    second: Instruction,
    positions: tuple[int, int],
    first_ins: list[Any],
    second_ins: list[Any],
    target: np.ndarray,
    step: int,
    pool: WorkerPool | None,
) -> None:
    compiled = compiled_pairs.rows_runner(first, second, first_ins, second_ins, target)
    if compiled is not None:
        ranges = shares(pool, target.shape, PAIR_SHARE)
        compiled_pairs.note(first, second, run_shares(pool, ranges, compiled), fp_signals.watched())
        return
    ndim = target.ndim
    first_call, second_call = spec(first.op).reference, spec(second.op).reference
    first_attrs, second_attrs = first.attr_dict(), second.attr_dict()
    watched = fp_signals.watched()

    def run(begin: int, end: int) -> NumpyLog:
        log = NumpyLog()
        buffer = np.empty((step, *target.shape[1:]), first.outputs[0].dtype)
        with logging_state(watched, log) if watched else np.errstate(all="ignore"):
            for start in range(begin, end, step):
                stop = min(end, start + step)
                chunk = buffer[: stop - start]
                log.current = first
                try:
                    first_call([chunk], [rows_of(value, ndim, start, stop) for value in first_ins], first_attrs)
                    log.current = second
                    second_call([target[start:stop]], [chunk if value is None else rows_of(value, ndim, start, stop) for value in second_ins], second_attrs)
                except Exception as error:
                    name_instruction(error, positions[0] if log.current is first else positions[1], log.current)
                    raise
        return log

    for log in run_shares(pool, shares(pool, target.shape, PAIR_SHARE), run):
        for source, message in zip(log.sources, log.messages):
            if source is not None and category(message) & watched:
                fp_signals.note(source, named(source, message))

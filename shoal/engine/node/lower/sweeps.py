"""Several in-place stencil sweeps per pass over memory (temporal blocking).

A sweep such as ``grid[1:-1, 1:-1] = 0.2 * (grid[1:-1, 1:-1] + grid[:-2, 1:-1] + ...)`` is a
fusion group with one deferred write (``shoal.engine.node.lower.deferred``) that reads only its own
base, through shifted copies of the written view. Consecutive identical sweeps merge into one
kernel program that runs ``sweeps`` of them per view-block, as a pipeline of rings of rows
(``codegen/sweep_source.py``): sweep 1 of row ``r``, then sweep 2 of row ``r - ahead``, and so on, so
the grid is read and written once for all of them.

A view-block computes the earlier sweeps also for the rows around it that its last sweep needs
(a halo of ``(sweeps - 1) * behind`` rows before it and ``(sweeps - 1) * ahead`` after it,
recomputed by both neighbours), so view-blocks stay independent. It reads the base ``sweeps``
times as far as one sweep does: the deferred write's reach is multiplied, and so are the rows
it holds for neighbouring view-blocks.

Sweeps that each write ``top`` rows fewer at the start of the first one's rows and ``bottom``
fewer at its end (``top`` 0 or ``behind``, ``bottom`` 0 or ``ahead``: each computes exactly the
rows whose inputs the one before it computed) fuse the same way; every row is stored from the
last sweep that computes it.

Within a row a sweep's reads are described by their shift ``(dr, dc)`` from the written element.
Reads of elements outside the written view see the base, which no sweep of the group changes;
that holds when a row's written columns plus the column halo do not wrap into another row.
"""

from __future__ import annotations

from dataclasses import replace

from shoal.engine.blocks.geometry import base_blocks, extent
from shoal.engine.node.keys import exact_key
from shoal.engine.node.lower.deferred import Reach
from shoal.engine.node.lower.program import (
    ARRAY,
    CONST,
    DEFERRED,
    TEMP,
    KernelProgram,
    Slot,
    Stencil,
)
from shoal.settings import SWEEPS_PER_PASS

DEFAULT_SWEEPS_PER_PASS: int = SWEEPS_PER_PASS.default


def stencil_of(program: KernelProgram) -> Stencil | None:
    """The shifts of ``program``'s reads if it is a sweep that can run several times per pass."""
    part = program.partition
    if program.sweeps != 1 or not program.stores_rows or part.axis != 0 or len(part.shape) != 2:
        return None
    if program.reductions or program.reduced or len(program.reaches) != 1:
        return None
    (target,) = program.reaches
    written = program.slots[target]
    itemsize = written.dtype.itemsize
    row, inner = written.strides
    if inner != itemsize or row % itemsize or row == 0:
        return None
    row_elements = row // itemsize
    shifts = []
    for i, slot in enumerate(program.slots):
        if slot.kind == ARRAY:
            if slot.rows is not None or slot.base != written.base or slot.dtype != written.dtype or slot.strides != written.strides or slot.written:
                return None
            distance = (slot.offset - written.offset) // itemsize
            if (slot.offset - written.offset) % itemsize:
                return None
            dr = round(distance / row_elements)
            shifts.append((i, dr, distance - dr * row_elements))
        elif slot.kind not in (CONST, TEMP, DEFERRED) or (slot.kind == DEFERRED and i != target):
            return None
    for step in program.steps:
        if step.axis_reduction or len(step.outputs) != 1:
            return None
        if program.slots[step.outputs[0]].kind not in (TEMP, DEFERRED):
            return None
    if not shifts:
        return None
    columns = part.shape[1]
    halo = max(abs(dc) for _i, _dr, dc in shifts)
    if columns + halo > abs(row_elements):
        return None  # the column halo would wrap into the written elements of another row
    behind = max(0, *(-dr for _i, dr, _dc in shifts))
    ahead = max(0, *(dr for _i, dr, _dc in shifts))
    if program.reaches[target] != Reach(behind, ahead):
        return None
    if halo:  # the halo columns lie between elements a sweep reads
        distances = [dr * row_elements + dc for _i, dr, dc in shifts]
        if min(distances) > -halo or max(distances) < halo:
            return None
    return Stencil(target, tuple(shifts), halo, behind, ahead)


def sweep_key(program: KernelProgram) -> tuple:
    """Equal for programs that compute the same sweep over the same memory (temporaries aside),
    constants bit-exact: the plan cache keys which constants are equal the same way, so a replay
    fuses only sweeps whose constants are equal in its own batch too."""
    return (program.structure(), _slot_facts(program, None), program.partition)


def _slot_facts(program: KernelProgram, origin: int | None) -> tuple:
    """Each slot's kind, dtype, base, offset, strides, constant and write; with an ``origin``,
    arrays' offsets less it and no temporary's (a fused pass keeps its temporaries in registers)."""
    return tuple(
        (
            s.kind,
            s.dtype.str,
            -1 if s.kind == TEMP else s.base,
            _offset(s, origin),
            s.strides,
            exact_key(None if s.const is None else s.const.value),
            s.written,
        )
        for s in program.slots
    )


def _offset(slot: Slot, origin: int | None) -> int | None:
    if origin is None:
        return slot.offset
    if slot.kind in (ARRAY, DEFERRED):
        return slot.offset - origin
    return None if slot.kind == TEMP else slot.offset


def shrunk_by(first: KernelProgram, stencil: Stencil, following: KernelProgram) -> tuple[int, int] | None:
    """The rows ``following`` writes fewer than ``first`` at the start and at the end of
    ``first``'s rows, if it is ``first``'s sweep over a sub-range of them (a rank computing the
    halo rows still current shrinks its sweeps so: ``shoal.cluster.halo``), else None."""
    target = stencil.target
    if len(following.slots) != len(first.slots) or following.slots[target].kind != DEFERRED:
        return None
    part, other = first.partition, following.partition
    if other.axis != part.axis or other.shape[1:] != part.shape[1:] or other.shape[0] > part.shape[0]:
        return None
    origin, moved = first.slots[target].offset, following.slots[target].offset
    row = first.slots[target].strides[0]
    if (moved - origin) % row or following.structure() != first.structure():
        return None
    if _slot_facts(following, moved) != _slot_facts(first, origin):
        return None
    top = (moved - origin) // row
    return top, part.shape[0] - other.shape[0] - top


def chain_shrink(stencil: Stencil, moved: tuple[int, int] | None, shrink: tuple[int, int] | None, earlier: int) -> tuple[int, int] | None:
    """The rows each sweep of a chain writes fewer at the top and at the bottom, if a sweep that
    writes ``moved`` rows fewer than the first (:func:`shrunk_by`) follows ``earlier`` sweeps
    shrinking by ``shrink`` (None: the first sweep alone so far); else None."""
    if moved is None:
        return None
    if shrink is None:
        top, bottom = moved
        if top not in (0, stencil.behind) or bottom not in (0, stencil.ahead) or top + bottom == 0:
            return None
        return moved
    if shrink == (0, 0) or moved != (earlier * shrink[0], earlier * shrink[1]):
        return None
    return shrink


def fused(program: KernelProgram, stencil: Stencil, sweeps: int) -> KernelProgram:
    """``program`` running ``sweeps`` times per view-block (each over ``stencil.top`` and
    ``stencil.bottom`` rows fewer than the one before it)."""
    reach = Reach(sweeps * stencil.behind, sweeps * stencil.ahead)
    return replace(program, reaches={stencil.target: reach}, sweeps=sweeps, stencil=stencil, elements=program.elements * sweeps)


def widened_reads(program: KernelProgram, index: int, block_bytes: int) -> list[tuple[int, int]]:
    """Base-blocks view-block ``index`` of a fused program reads: its rows and the halo rows
    whose earlier sweeps it recomputes, through every read's shift (column halo included)."""
    stencil = program.stencil
    assert stencil is not None
    part = program.partition
    extra = program.sweeps - 1
    first = max(0, part.starts[index] - extra * stencil.behind)
    last = min(part.shape[0], part.stops[index] + extra * stencil.ahead)
    low = high = None
    for i, _dr, _dc in stencil.shifts:
        slot = program.slots[i]
        offset = slot.offset + first * slot.strides[0]
        lo, hi = extent(offset, (last - first, part.shape[1]), slot.strides, slot.dtype.itemsize)
        low = lo if low is None else min(low, lo)
        high = hi if high is None else max(high, hi)
    base = program.slots[stencil.target].base
    return [(base, k) for k in base_blocks(low, high, block_bytes)]

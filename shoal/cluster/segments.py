"""A long batch cut into its loop's iterations, so each rank plans one iteration and replays it.

A loop that reads nothing until its end reaches the cluster as one batch of many alike
iterations: Jacobi's 50 sweeps (650 instructions), lattice Boltzmann's 30 steps (about 2,000).
Every rank planned such a batch instruction by instruction (37 µs each; lattice Boltzmann's
planning took 0.43 s of a 1.05 s run at 2 ranks), while a batch seen before replays its plan
from the plan cache (:mod:`shoal.cluster.plan_cache`) at about 7 µs an instruction.

:func:`split` finds the loop's period, the shortest ``p`` for which computing instruction ``i``
looks like computing instruction ``i + p`` (operation, views and constants' types, whatever
their bases; releases aside) for nearly the whole batch, and cuts the batch every ``p`` computing
instructions, where the fewest of the batch's temporaries are alive. Each part is a batch of its
own: it declares the bases it mentions first, with their data, and may use and release bases an
earlier part declared, so the parts planned one after another are a valid plan of the whole
batch whatever the cuts; alike parts then share one cache entry. A cut moves no data: a batch whose parts would lay out a base that
came with data otherwise than the whole batch does (by which its parts were sent) is not cut.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from shoal.bytecode import BaseDecl, Batch, Instruction, View
from shoal.cluster.ops import released_bases
from shoal.cluster.plan_cache import instruction_key

MIN_INSTRUCTIONS = 64  # shorter batches are planned whole
MIN_PERIOD = 4
MAX_PERIOD = 1024  # with WINDOW, bounds the search: about 8 million comparisons on a batch of no period
WINDOW = 8192  # instructions compared, from the start
LIKENESS = 0.8  # of the instructions past the first period, those that must look like the one a period before


def _looks(instruction: Instruction) -> tuple:
    """What planning sees of ``instruction`` apart from its bases' numbers."""
    return ("release",) if instruction.op == "release" else instruction_key(instruction, _unnumbered)


def _unnumbered(base: int) -> None:
    return None


def period(instructions: list[Instruction]) -> int | None:
    """The shortest period (up to :data:`MAX_PERIOD`) of the loop ``instructions`` repeat, judged
    on their first :data:`WINDOW`, or None if they do not."""
    instructions = instructions[:WINDOW]
    count = len(instructions)
    kinds: dict[tuple, int] = {}
    codes = np.array([kinds.setdefault(_looks(instruction), len(kinds)) for instruction in instructions], dtype=np.int64)
    for candidate in range(MIN_PERIOD, min(count // 2, MAX_PERIOD) + 1):
        alike = np.count_nonzero(codes[:-candidate] == codes[candidate:])
        if alike >= LIKENESS * (count - candidate):
            return candidate
    return None


def _alive(instructions: list[Instruction]) -> list[int]:
    """Per position, how many of the batch's temporaries (bases it releases) are alive just
    before the instruction there."""
    released = released_bases(instructions)
    seen: set[int] = set()
    alive = 0
    counts = []
    for instruction in instructions:
        counts.append(alive)
        if instruction.op == "release":
            alive -= int(instruction.attr("base")) in seen
            continue
        for view in (*instruction.outputs, *instruction.inputs):
            if isinstance(view, View) and view.base in released and view.base not in seen:
                seen.add(view.base)
                alive += 1
    return counts


def split(batch: Batch, layouts_of: Callable[[Batch], dict]) -> list[tuple[int, Batch]] | None:
    """``batch`` as parts (each with the position of its first instruction) one loop iteration
    long, or None if it is not worth cutting or a cut would change a layout (``layouts_of``:
    the planner's layouts of the bases a batch declares)."""
    instructions = batch.instructions
    if len(instructions) < MIN_INSTRUCTIONS:
        return None
    # Releases come where the program drops its last reference, which moves from one iteration
    # to the next (lattice Boltzmann: 38% of a 430-instruction batch alike at its period, 96%
    # without its releases): the period is the computing instructions'.
    computing = [position for position, instruction in enumerate(instructions) if instruction.op != "release"]
    found = period([instructions[position] for position in computing])
    if found is None:
        return None
    alive = _alive(instructions)
    alive_at = [alive[position] for position in computing]
    start = min(range(found), key=lambda offset: (sum(alive_at[offset::found]), offset))  # fewest alive over all cuts
    cuts = [computing[index] for index in range(start, len(computing), found) if computing[index] > 0]
    return cut(batch, [0, *cuts], layouts_of)


def cut(batch: Batch, starts: list[int], layouts_of: Callable[[Batch], dict]) -> list[tuple[int, Batch]] | None:
    """``batch`` cut into parts beginning at ``starts`` (0 first, increasing), or None if a part
    would lay out a base that came with data otherwise than the whole batch does."""
    bounds = list(zip(starts, [*starts[1:], len(batch.instructions)]))
    parts = _parts(batch, bounds)
    whole = layouts_of(_with_data(batch))
    for _, part in parts:
        if not part.data:
            continue
        mine = layouts_of(_with_data(part))
        if any(mine[base] != whole[base] for base in part.data):
            return None
    return parts


def _with_data(batch: Batch) -> Batch:
    """``batch`` declaring only the bases it carries data for: the parts of their data went to
    the ranks by the whole batch's layouts, which each part must keep. (Another base's layout
    is each part's own, the same on every rank.)"""
    return Batch(bases=[decl for decl in batch.bases if decl.id in batch.data], instructions=batch.instructions, data=batch.data)


def _parts(batch: Batch, bounds: list[tuple[int, int]]) -> list[tuple[int, Batch]]:
    """The parts of ``batch`` between ``bounds``; each declares the bases it mentions first (the
    first part also those no instruction mentions)."""
    declared = {decl.id: decl for decl in batch.bases}
    placed: set[int] = set()
    parts = []
    for low, high in bounds:
        chunk = batch.instructions[low:high]
        bases: list[BaseDecl] = []
        for instruction in chunk:
            named = [int(instruction.attr("base"))] if instruction.op == "release" else [view.base for view in (*instruction.outputs, *instruction.inputs) if isinstance(view, View)]
            for base in named:
                if base in declared and base not in placed:
                    placed.add(base)
                    bases.append(declared[base])
        parts.append((low, Batch(bases=bases, instructions=chunk)))
    rest = [decl for decl in batch.bases if decl.id not in placed]
    if rest:
        parts[0][1].bases[:0] = rest
    order = {decl.id: position for position, decl in enumerate(batch.bases)}
    for _, part in parts:
        part.bases.sort(key=lambda decl: order[decl.id])  # the batch's order of declarations
        part.data = {decl.id: batch.data[decl.id] for decl in part.bases if decl.id in batch.data}
    return parts

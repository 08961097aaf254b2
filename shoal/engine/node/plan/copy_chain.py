"""Copies through a small scratch array, run as one block operation.

``populations[i] = np.roll(populations[i], (vy, vx), axis=(0, 1))`` (lattice_boltzmann.py)
records up to four copies into a new array, one copy of it back into the source and its
release. Planned one by one they became up to five fusion groups of different shapes, each
planned (~0.2 ms), split into view-blocks and scheduled, for 4 MB of copying that stays in
the cache: 45 rolls per 5 steps were 60 % of the batch's block operations. A *copy chain* (copies
into a base the batch declares without data, then one copy out of it, then its release) runs
its copies in program order as one block operation; chains of different populations run in
parallel like any independent operations.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from shoal.bytecode import Batch, Instruction, View

CHAIN_ELEMENTS = 1 << 20  # larger scratch arrays are planned as usual (they are worth splitting)


@dataclass(frozen=True)
class CopyChain:
    """Instructions that run in order as one whole-view block operation."""

    instructions: tuple[Instruction, ...]


def scratch_bases(batch: Batch) -> frozenset[int]:
    """Bases a chain may copy through: declared by ``batch``, without data, small."""
    return frozenset(decl.id for decl in batch.bases if decl.size <= CHAIN_ELEMENTS and decl.id not in batch.data)


def take_copy_chain(first: Instruction, queue: deque, scratch_ids: frozenset[int]) -> CopyChain | None:
    """The chain that ``first`` starts, taken off the front of ``queue``; None (and ``queue``
    untouched) if ``first`` starts none. The scratch base's release stays in the queue."""
    scratch = _copy_into_scratch(first, scratch_ids)
    if scratch is None:
        return None
    chain = [first]
    for item in queue:
        if not isinstance(item, Instruction) or item.op != "copy":
            return None
        if _copy_into_scratch(item, scratch_ids) == scratch:
            chain.append(item)
            continue
        source, target = item.inputs[0], item.outputs[0]
        if not isinstance(source, View) or source.base != scratch or target.base == scratch:
            return None
        chain.append(item)
        break
    else:
        return None
    following = queue[len(chain) - 1] if len(queue) >= len(chain) else None
    if not _releases(following, scratch):
        return None
    for _ in range(len(chain) - 1):
        queue.popleft()
    return CopyChain(tuple(chain))


def _copy_into_scratch(instruction: Instruction, scratch_ids: frozenset[int]) -> int | None:
    """The base ``instruction`` copies into from another base, if it may be a chain's scratch."""
    if instruction.op != "copy" or len(instruction.inputs) != 1 or not isinstance(instruction.inputs[0], View):
        return None
    target = instruction.outputs[0].base
    return target if target in scratch_ids and instruction.inputs[0].base != target else None


def _releases(item: object, base: int) -> bool:
    if isinstance(item, Instruction):
        return item.op == "release" and item.attr("base") == base
    return getattr(item, "base", None) == base

"""Where a run of fusible instructions too long for one kernel is cut: where cutting costs least.

A fusion group holds at most ``MAX_GROUP_STEPS`` instructions. Cut every that many
instructions, a loop whose iteration is not a multiple of it starts its groups at a different
point of the iteration each time, and every such group is a kernel structure of its own, each
compiled separately: Black-Scholes over 30 days had 35 structures where one day needs two.

Instead the planner first finds the whole run (a group without the limit) and cuts it where
cutting costs least: the bytes of arrays written before the cut and read after it (written to
memory and read back, counted twice) plus those of arrays read on both sides (read once more).
The cost is a function of the program, not of where the run began, so a loop's iterations are
cut at the same points as soon as one cut falls at the cheapest point of an iteration (where
only its inputs are live): each cut is the cheapest point within reach of the previous one,
the latest one among equally cheap points (fewer, longer kernels).
"""

from __future__ import annotations

import math

from shoal.bytecode import Instruction, View

SHORTEST_FRACTION = 4  # a cut leaves at least 1/4 of the limit before it (no tiny kernels)


def cut_costs(instructions: list[Instruction]) -> list[int]:
    """Per position ``c`` (0 to ``len(instructions)``), what cutting before instruction ``c``
    costs in bytes moved: twice each array written before it and read at or after it, once each
    array only read on both sides."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    written: set[int] = set()
    size: dict[int, int] = {}
    for position, instruction in enumerate(instructions):
        views = [(view, False) for view in instruction.inputs if isinstance(view, View)]
        views += [(view, True) for view in instruction.outputs]
        for view, write in views:
            first.setdefault(view.base, position)
            last[view.base] = position
            size[view.base] = max(size.get(view.base, 0), math.prod(view.shape) * view.dtype.itemsize)
            if write:
                written.add(view.base)
    change = [0] * (len(instructions) + 2)
    for base, begin in first.items():  # the base is live across cuts begin + 1 .. last
        weight = (2 if base in written else 1) * size[base]
        change[begin + 1] += weight
        change[last[base] + 1] -= weight
    costs = []
    running = 0
    for position in range(len(instructions) + 1):
        running += change[position]
        costs.append(running)
    return costs


def cut_points(instructions: list[Instruction], limit: int) -> list[int]:
    """Positions to cut ``instructions`` at so that no piece is longer than ``limit``: from the
    start, each cut is the cheapest (:func:`cut_costs`) of the positions that leave a piece of
    ``limit / SHORTEST_FRACTION`` to ``limit`` instructions, the latest one among equals."""
    if limit < 1:
        raise ValueError(f"a group holds at least one instruction, got a limit of {limit}")
    costs = cut_costs(instructions)
    shortest = max(1, limit // SHORTEST_FRACTION)
    cuts: list[int] = []
    start = 0
    while len(instructions) - start > limit:
        candidates = range(start + shortest, start + limit + 1)
        cut = min(candidates, key=lambda position: (costs[position], -position))
        cuts.append(cut)
        start = cut
    return cuts

"""Where a run of fusible instructions too long for one kernel is cut: where cutting costs least.

A fusion group holds at most ``MAX_GROUP_STEPS`` instructions. Cut every that many
instructions, a loop whose iteration is not a multiple of it starts its groups at a different
point of the iteration each time, and every such group is a kernel structure of its own, each
compiled separately: Black-Scholes over 30 days had 35 structures where one day needs two.

Instead the planner first finds the whole run (a group without the limit) and cuts it where
cutting costs least: where the fewest bytes of arrays are live across the cut (each of them is
written to memory, or read once more, because of it). That is a function of the program, not of
where the run began, so a loop's iterations are cut at the same points as soon as one cut falls
at the cheapest point of an iteration (where only its inputs are live): each cut is the cheapest
point within reach of the previous one, the latest one among equally cheap points (fewer,
longer kernels).
"""

from __future__ import annotations

import math

from shoal.bytecode import Instruction, View

SHORTEST_FRACTION = 4  # a cut leaves at least 1/4 of the limit before it (no tiny kernels)


def cut_costs(instructions: list[Instruction], outliving: set[int]) -> list[int]:
    """Per position ``c`` (0 to ``len(instructions)``), the bytes of the arrays live across a cut
    before instruction ``c``: an array the run reads before writing it is live from the start, one
    it writes from then on; it stays live up to its last access, or to the end if it is in
    ``outliving`` (used after the run). So a part iteration at either end of a run costs what the
    same part of a whole iteration does."""
    first: dict[int, int] = {}
    last: dict[int, int] = {}
    size: dict[int, int] = {}
    for position, instruction in enumerate(instructions):
        views = [(view, True) for view in instruction.inputs if isinstance(view, View)]
        views += [(view, False) for view in instruction.outputs]
        for view, read in views:
            if view.base not in first:
                first[view.base] = 0 if read else position
            last[view.base] = position
            size[view.base] = max(size.get(view.base, 0), math.prod(view.shape) * view.dtype.itemsize)
    change = [0] * (len(instructions) + 2)
    for base, begin in first.items():  # live across the cuts begin + 1 .. end
        end = len(instructions) if base in outliving else last[base]
        change[begin + 1] += size[base]
        change[end + 1] -= size[base]
    costs = []
    running = 0
    for position in range(len(instructions) + 1):
        running += change[position]
        costs.append(running)
    return costs


def cut_points(instructions: list[Instruction], limit: int, outliving: set[int]) -> list[int]:
    """Positions to cut ``instructions`` at so that no piece is longer than ``limit``: from the
    start, each cut is the cheapest (:func:`cut_costs`) of the positions that leave a piece of
    ``limit / SHORTEST_FRACTION`` to ``limit`` instructions, the latest one among equals."""
    if limit < 1:
        raise ValueError(f"a group holds at least one instruction, got a limit of {limit}")
    costs = cut_costs(instructions, outliving)
    shortest = max(1, limit // SHORTEST_FRACTION)
    cuts: list[int] = []
    start = 0
    while len(instructions) - start > limit:
        candidates = range(start + shortest, start + limit + 1)
        cut = min(candidates, key=lambda position: (costs[position], -position))
        cuts.append(cut)
        start = cut
    return cuts

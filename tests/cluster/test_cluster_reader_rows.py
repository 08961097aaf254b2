"""Own rows with a batch's temporaries computed over the rows their readers read
(``shoal/cluster/reader_rows.py``), planned for 2-4 ranks and run on reference engines through a
mailbox (``test_cluster_halo_simulated``).

The program is shallow water's pattern: fluxes of ``h[:-1]`` and of ``h[1:]`` (two arrays), their
difference on the faces, and an update of the interior from the faces on either side of each row.
It must give NumPy's bits, send fewer messages than the plan without the widened temporaries,
and, where the halo holds the two rows a step reads beyond a rank's own, bring every array's
halo rows in one exchange per step (with one halo row the faces' difference still takes a row
of the neighbour's faces mid-step).
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster.test_cluster_halo_simulated import TAGS, gather, run_plans
from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View, make_attrs
from shoal.cluster import plan as plan_module
from shoal.cluster.plan import PlanConfig, Planner
from shoal.cluster.reader_rows import RowPlan
from shoal.engine.reference import ReferenceEngine

F8 = np.dtype("f8")
H, M = 1, 2


class Faces:
    """Batches of steps over grids ``h`` and ``m`` of ``rows`` x ``columns``, and NumPy's."""

    def __init__(self, rows: int, columns: int, seed: int) -> None:
        self.shape = (rows, columns)
        rng = np.random.default_rng(seed)
        self.grids = {H: rng.random(rows * columns), M: rng.random(rows * columns)}
        self.numpy = {base: values.reshape(self.shape).copy() for base, values in self.grids.items()}
        self.next = 10

    def rows(self, base: int, begin: int, end: int) -> View:
        columns = self.shape[1]
        return View(base, F8, begin * columns * 8, (end - begin, columns), (columns * 8, 8))

    def temporary(self, rows: int) -> View:
        self.next += 1
        columns = self.shape[1]
        return View(self.next, F8, 0, (rows, columns), (columns * 8, 8))

    def first(self) -> Batch:
        """The first step, with the grids and their data: their layout then follows their rows."""
        batch = self.step()
        batch.bases[:0] = [BaseDecl(base, F8, values.size) for base, values in self.grids.items()]
        batch.data.update(self.grids)
        return batch

    def step(self) -> Batch:
        n = self.shape[0]
        lower, upper, face = (self.temporary(n - 1) for _ in range(3))
        change, scaled = self.temporary(n - 2), self.temporary(n - 2)
        columns = self.shape[1]
        face_rows = lambda begin, end: View(face.base, F8, begin * columns * 8, (end - begin, columns), (columns * 8, 8))  # noqa: E731
        instructions = [
            Instruction("multiply", (lower,), (self.rows(H, 0, n - 1), self.rows(M, 0, n - 1))),
            Instruction("multiply", (upper,), (self.rows(H, 1, n), self.rows(M, 1, n))),
            Instruction("subtract", (face,), (upper, lower)),
            Instruction("subtract", (change,), (face_rows(1, n - 1), face_rows(0, n - 2))),
            Instruction("multiply", (scaled,), (change, Const(0.25))),
            Instruction("subtract", (self.rows(H, 1, n - 1),), (self.rows(H, 1, n - 1), scaled)),
            Instruction("add", (self.rows(M, 1, n - 1),), (self.rows(M, 1, n - 1), change)),
        ]
        bases = [lower, upper, face, change, scaled]
        instructions += [Instruction("release", (), (), make_attrs(base=view.base)) for view in bases]
        h, m = self.numpy[H], self.numpy[M]
        faces = h[1:] * m[1:] - h[:-1] * m[:-1]
        difference = faces[1:] - faces[:-1]
        h[1:-1] = h[1:-1] - difference * 0.25
        m[1:-1] = m[1:-1] + difference
        return Batch(bases=[BaseDecl(view.base, F8, view.shape[0] * columns) for view in bases], instructions=instructions)


def run(ranks: int, halo: int, batches: list[Batch]) -> tuple[list[Planner], list[ReferenceEngine], int, list[list]]:
    config = PlanConfig(min_bytes=64, cache_size=4, halo_rows=halo, redundant_rows=False)
    planners = [Planner(rank, ranks, config, TAGS) for rank in range(ranks)]
    engines = [ReferenceEngine() for _ in range(ranks)]
    sent, plans = 0, []
    for batch in batches:
        ops = [planner.plan(batch) for planner in planners]
        plans.append(ops)
        sent += run_plans(ops, engines)
    return planners, engines, sent, plans


@pytest.mark.full
@settings(max_examples=20, deadline=None)
@given(ranks=st.integers(2, 4), halo=st.integers(1, 4), rows=st.integers(12, 30), steps=st.integers(1, 4), seed=st.integers(0, 100))
def test_temporaries_over_their_readers_rows_give_numpys_bits_with_fewer_messages(ranks: int, halo: int, rows: int, steps: int, seed: int) -> None:
    columns = rows  # square: a grid that came with data is split in whole rows
    program = Faces(rows, columns, seed)
    batches = [program.first()] + [program.step() for _ in range(steps - 1)]
    planners, engines, sent, plans = run(ranks, halo, batches)
    for base, want in program.numpy.items():
        np.testing.assert_array_equal(gather(planners, engines, base, program.shape), want)
    for ops in (ops for step in plans for ops in step):
        receives = [position for position, op in enumerate(ops) if op.kind == "receive"]
        if receives and halo >= 2:  # one exchange: no computation between a step's first and last receive
            assert all(op.kind != "compute" for op in ops[receives[0] : receives[-1]])
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(plan_module, "plan_rows", lambda *arguments: RowPlan())
        again = Faces(rows, columns, seed)
        _, _, sent_owners_rows, _ = run(ranks, halo, [again.first()] + [again.step() for _ in range(steps - 1)])
    assert sent < sent_owners_rows or halo < 2

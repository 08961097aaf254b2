"""Interior first (shoal.cluster.interior_first) without MPI: every rank's operations run on a
reference engine of its own in an order the flush could take, against NumPy.

The flush orders operations only by the dependency lists (the blocks of memory each reads and
writes), so each rank here draws them as its flush does, runs its operations as soon as they
allow, and completes a receive only when nothing else can run: whatever an operation does not
declare that it touches is then read or written too early, and the results differ from NumPy's.
"""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster.test_cluster_halo_simulated import Draws, Program, compute, gather
from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View, make_attrs
from shoal.cluster.flush import Flusher
from shoal.cluster.plan import Op, PlanConfig, Planner
from shoal.engine.blocks import BlockOp
from shoal.engine.reference import ReferenceEngine

F8 = np.dtype("f8")
TAGS = 1 << 15


def run_eagerly(
    planners: list[Planner], plans: list[list[Op]], engines: list[ReferenceEngine]
) -> list[list[Op]]:
    """Run every rank's operations as early as their dependency blocks allow, receives as late
    as possible; returns each rank's operations in the order they ran."""
    ranks = []
    for planner, ops in zip(planners, plans):  # the dependency graph the flush draws
        flusher = Flusher(None, None, planner.rank, True, planner.block_bytes)  # type: ignore[arg-type]
        ranks.append([(block, flusher._plan[id(block)]) for block in flusher._blocks(ops)])
    mailbox: dict[tuple[int, int, int], np.ndarray] = {}
    ran: list[list[Op]] = [[] for _ in plans]

    def finish(block: BlockOp, rank: int, op: Op) -> None:
        block.done = True
        ran[rank].append(op)
        for dependent in block.dependents:
            dependent.refcount -= 1

    while any(not block.done for blocks in ranks for block, _ in blocks):
        progressed = False
        for rank, blocks in enumerate(ranks):
            while True:
                ready = [
                    (block, op) for block, op in blocks if not block.done and block.refcount == 0
                ]
                doing = next(
                    ((block, op) for block, op in ready if op.kind == "send"), None
                ) or next(((block, op) for block, op in ready if op.kind == "compute"), None)
                if doing is None:
                    doing = next(
                        ((block, op) for block, op in ready if (op.peer, rank, op.tag) in mailbox),
                        None,
                    )
                if doing is None:
                    break
                block, op = doing
                if op.kind == "send":
                    assert op.view is not None
                    mailbox[(rank, op.peer, op.tag)] = np.array(engines[rank].fetch(op.view))
                elif op.kind == "receive":
                    op.buffer = mailbox.pop((op.peer, rank, op.tag)).reshape(op.shape)
                else:
                    compute(engines[rank], op)
                finish(block, rank, op)
                progressed = True
        assert progressed, "every rank waits for a message no rank sends"
    assert not mailbox
    return ran


def run_program(
    ranks: int, halo: int, batches: list[Batch]
) -> tuple[list[Planner], list[ReferenceEngine], list[list[list[Op]]]]:
    config = PlanConfig(
        min_bytes=64, cache_size=4, halo_rows=halo, redundant_rows=False, interior_first=True
    )
    planners = [Planner(rank, ranks, config, TAGS) for rank in range(ranks)]
    engines = [ReferenceEngine() for _ in range(ranks)]
    orders = [
        run_eagerly(planners, [planner.plan(batch) for planner in planners], engines)
        for batch in batches
    ]
    return planners, engines, orders


@pytest.mark.full
@settings(max_examples=30, deadline=None)
@given(
    data=st.data(),
    ranks=st.integers(2, 4),
    halo=st.integers(1, 4),
    rows=st.integers(8, 30),
    columns=st.integers(3, 7),
    steps=st.integers(1, 8),
)
def test_random_stencils_run_out_of_order_are_numpys(
    data: st.DataObject, ranks: int, halo: int, rows: int, columns: int, steps: int
) -> None:
    program = Program(data, rows, columns)
    batches = [program.first()] + [program.step() for _ in range(steps)]
    planners, engines, _ = run_program(ranks, halo, batches)
    for base, want in program.numpy.items():
        np.testing.assert_array_equal(gather(planners, engines, base, program.shape), want)


def sweeps(rows: int, count: int) -> Program:
    """``g[1:-1, 1:-1] = 0.5 * (g[:-2, 1:-1] + g[2:, 1:-1])``, ``count`` times, on a grid of
    ``rows`` x 6 (the draws of :class:`Program`)."""
    return Program(Draws([0] + [[11, 12], True, 1, 1, 1, rows - 1, 1, 0.5, False] * count), rows, 6)  # type: ignore[arg-type]


@pytest.mark.parametrize("ranks", [2, 3])
def test_the_interior_of_a_sweep_runs_before_its_halo_arrives(ranks: int) -> None:
    """Each rank's interior computation of an in-place sweep depends on no receive: it runs
    before the halo's receive completes (run as late as possible), its edges after it, and the
    grid is NumPy's."""
    program = sweeps(24, 3)
    batches = [program.first()] + [program.step() for _ in range(3)]
    planners, engines, orders = run_program(ranks, 2, batches)
    for rank in range(ranks):
        order = orders[-1][rank]
        kinds = [op.kind for op in order]
        computes = [
            index
            for index, op in enumerate(order)
            if op.kind == "compute"
            and any(instruction.op == "add" for instruction in op.instructions)
        ]
        receives = [index for index, kind in enumerate(kinds) if kind == "receive"]
        assert len(computes) == 2 and receives, kinds  # the interior and the edges
        assert computes[0] < min(receives) and computes[1] > max(receives), kinds
    np.testing.assert_array_equal(gather(planners, engines, 11, program.shape), program.numpy[11])


def test_a_temporary_read_after_the_region_keeps_the_sweep_whole() -> None:
    """``t = g[:-2] + g[2:]; h[1:-1] = 2 * t; g[1:-1] = t``, twice (the second sweep exchanges
    halo rows): the temporary is read after the write that ends the region, so the sweep is not
    split (its fresh temporaries would not hold it), and every array is NumPy's."""
    rows = columns = 12  # square: the grids' rows are guessed from their sizes
    rng = np.random.default_rng(3)
    g, h = rng.random(rows * columns), rng.random(rows * columns)
    stride = columns * 8

    def view(base: int, first: int, last: int) -> View:
        return View(base, F8, first * stride, (last - first, columns), (stride, 8))

    def sweep(temporary: int) -> Batch:
        total = View(temporary, F8, 0, (rows - 2, columns), (stride, 8))
        return Batch(
            bases=[BaseDecl(temporary, F8, (rows - 2) * columns)],
            instructions=[
                Instruction("add", (total,), (view(1, 0, rows - 2), view(1, 2, rows))),
                Instruction("multiply", (view(2, 1, rows - 1),), (total, Const(2.0))),
                Instruction("copy", (view(1, 1, rows - 1),), (total,)),
                Instruction("release", (), (), make_attrs(base=temporary)),
            ],
        )

    first = Batch(bases=[BaseDecl(1, F8, g.size), BaseDecl(2, F8, h.size)], data={1: g.copy(), 2: h.copy()})
    planners, engines, _ = run_program(3, 2, [first, sweep(3), sweep(4)])
    want_g, want_h = g.reshape(rows, columns).copy(), h.reshape(rows, columns).copy()
    for _ in range(2):
        total = want_g[:-2] + want_g[2:]
        want_h[1:-1] = 2 * total
        want_g[1:-1] = total
    np.testing.assert_array_equal(gather(planners, engines, 1, (rows, columns)), want_g)
    np.testing.assert_array_equal(gather(planners, engines, 2, (rows, columns)), want_h)

"""The order in which a rank's flush runs its ready operations (no MPI needed: sends and the
node engine are recorded instead of run).

A reduction's partial result is sent after the computations that are ready with it, so that
``grid[:] = work`` after ``np.sum(...)`` joins the node-engine batch of the sweep it follows
(the heat example: one fused kernel instead of a second batch copying the rows).
"""

from __future__ import annotations

import pytest

from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View, make_attrs
from shoal.cluster.flush import Flusher
from shoal.cluster.plan import Op, PlanConfig, Planner
from shoal.engine.blocks import run_ready
from tests.cluster.test_cluster_plan_cache import (
    COLUMNS,
    F8,
    ROWS,
    TAGS,
    Ids,
    creation,
    sweep,
    whole,
)


def relax_and_measure(grid: int, ids: Ids) -> Batch:
    """``work = 0.5 * grid; delta = np.sum(np.abs(work - grid)); grid[:] = work``."""
    shape = (ROWS, COLUMNS)
    work, difference, delta = ids(), ids(), ids()
    return Batch(
        bases=[BaseDecl(work, F8, ROWS * COLUMNS), BaseDecl(difference, F8, ROWS * COLUMNS), BaseDecl(delta, F8, 1)],
        instructions=[
            Instruction("multiply", (whole(work, shape),), (Const(0.5), whole(grid, shape))),
            Instruction("subtract", (whole(difference, shape),), (whole(work, shape), whole(grid, shape))),
            Instruction("absolute", (whole(difference, shape),), (whole(difference, shape),)),
            Instruction("sum", (View(delta, F8, 0, (), ()),), (whole(difference, shape),), make_attrs(axis=None)),
            Instruction("release", (), (), make_attrs(base=difference)),
            Instruction("copy", (whole(grid, shape),), (whole(work, shape),)),
            Instruction("release", (), (), make_attrs(base=work)),
        ],
    )


def handed_over(rank: int, late: bool) -> list[list[str]]:
    """The opcodes of each node-engine batch rank ``rank`` of 2 hands over before each send ("send"
    marks a send), running the batch above after the grid's creation."""
    planner = Planner(rank, 2, PlanConfig(min_bytes=256, cache_size=0), TAGS)
    ids = Ids()
    grid = ids()
    planner.plan(creation(grid, 1))
    ops = planner.plan(relax_and_measure(grid, ids))
    assert any(op.kind == "send" for op in ops) and not any(op.kind == "receive" for op in ops)
    for op in ops:
        op.late = op.late and late
    flusher = Flusher(None, None, rank, True, planner.block_bytes)  # type: ignore[arg-type]
    events: list[list[str]] = [[]]

    def gather(op: Op) -> None:
        events[-1].extend(instruction.op for instruction in op.instructions if instruction.op != "release")

    def send(op: Op) -> None:
        events.append(["send"])
        events.append([])

    flusher._add_compute = gather  # type: ignore[method-assign]
    flusher._send = send  # type: ignore[method-assign]
    run_ready(flusher._blocks(ops), flusher._submit, flusher, capacity=1)
    return [batch for batch in events if batch]


def test_the_copy_after_a_sum_joins_the_sweeps_batch_before_the_partial_is_sent() -> None:
    batches = handed_over(1, late=True)
    assert batches[-1] == ["send"]
    assert "copy" in batches[-2] and "sum" in batches[-2]


def test_without_late_sends_the_copy_was_a_batch_of_its_own() -> None:
    batches = handed_over(1, late=False)
    position = batches.index(["send"])
    assert "sum" in batches[position - 1] and "copy" in batches[position + 1]


def test_a_send_hands_the_gathered_batch_over_only_if_it_reads_from_it() -> None:
    """The partial sum is computed in the gathered batch: its send needs that batch run first.
    Computations it does not read from (gathered before it, or releases) do not hold it up."""
    planner = Planner(1, 2, PlanConfig(min_bytes=256, cache_size=0), TAGS)
    ids = Ids()
    grid = ids()
    planner.plan(creation(grid, 1))
    ops = planner.plan(relax_and_measure(grid, ids))
    flusher = Flusher(None, None, 1, True, planner.block_bytes)  # type: ignore[arg-type]
    blocks = flusher._blocks(ops)
    send = next(block for op, block in zip(ops, blocks, strict=True) if op.kind == "send")
    feeding = [op for op, block in zip(ops, blocks, strict=True) if send in block.dependents]
    others = [op for op in ops if op.kind == "compute" and op not in feeding]
    assert feeding and others
    for op in others:
        flusher._add_compute(op)
    assert not flusher.reads_gathered(flusher._plan[id(send)])
    flusher._add_compute(feeding[0])
    assert flusher.reads_gathered(flusher._plan[id(send)])
    flusher.inner = type("Engine", (), {"execute": lambda self, batch: None})()  # type: ignore[assignment]
    flusher.submit_batch()
    assert not flusher.reads_gathered(flusher._plan[id(send)])


def halo_sweep_graphs(rank: int) -> list[tuple[Op, int]]:
    """Each op of rank ``rank`` of 2 in the second of two own-row sweeps, with the number of
    operations it waits for."""
    planner = Planner(rank, 2, PlanConfig(min_bytes=256, cache_size=0, halo_rows=1, redundant_rows=False), TAGS)
    ids = Ids()
    grid = ids()
    planner.plan(creation(grid, 1))
    planner.plan(sweep(grid, ids))
    ops = planner.plan(sweep(grid, ids))
    blocks = Flusher(None, None, rank, True, planner.block_bytes)._blocks(ops)  # type: ignore[arg-type]
    return [(op, block.waits) for op, block in zip(ops, blocks, strict=True)]


@pytest.mark.parametrize("rank", [0, 1])
def test_a_ranks_halo_sends_wait_for_nothing_its_neighbour_sends(rank: int) -> None:
    """Rank 0 receives its halo first in the global message order; the copy of those rows comes
    after its own send, which waited for the neighbour's message while it came before."""
    graph = halo_sweep_graphs(rank)
    sends = [waits for op, waits in graph if op.kind == "send"]
    assert sends and all(waits == 0 for waits in sends)
    kinds = [op.kind for op, _ in graph]
    last_send = max(position for position, kind in enumerate(kinds) if kind == "send")
    copies = [position for position, (op, _) in enumerate(graph) if op.needs]
    assert copies and min(copies) > last_send


def test_releases_alone_are_not_handed_over_before_a_wait() -> None:
    """Before waiting, the loop hands over gathered computations to overlap the wait; a batch of
    releases only would cost a node-engine batch and overlap nothing."""
    executed: list[list[str]] = []
    flusher = Flusher(type("Engine", (), {"execute": lambda self, batch: executed.append([i.op for i in batch.instructions])})(), None, 0, True, {})  # type: ignore[arg-type]
    flusher._add_compute(Op("compute", instructions=[Instruction("release", (), (), make_attrs(base=5))]))
    assert flusher.poll(None) == [] and executed == []
    flusher._add_compute(Op("compute", instructions=[Instruction("fill", (View(6, F8, 0, (2,), (8,)),), (Const(1.0),))]))
    assert flusher.poll(None) == [] and executed == [["release", "fill"]]


class _RecordingEngine:
    """A node engine that records the instructions of each batch it is handed."""

    def __init__(self) -> None:
        self.batches: list[list[Instruction]] = []

    def execute(self, batch: Batch) -> None:
        self.batches.append(list(batch.instructions))


def _late_flusher(rank: int, block_bytes: dict[int, int]) -> tuple[Flusher, _RecordingEngine, list[Op]]:
    """A flusher whose sends are recorded (in ``sent``) after handing over what they read."""
    engine = _RecordingEngine()
    flusher = Flusher(engine, None, rank, True, block_bytes)  # type: ignore[arg-type]
    sent: list[Op] = []

    def send(op: Op) -> None:
        if flusher.reads_gathered(op):
            flusher.submit_batch()
        sent.append(op)
        engine.batches.append([Instruction(f"send {len(sent)}", (), ())])

    flusher._send = send  # type: ignore[method-assign]
    return flusher, engine, sent


def test_a_batch_whose_messages_are_all_late_reaches_the_node_engine_whole_before_its_sends() -> None:
    planner = Planner(1, 2, PlanConfig(min_bytes=256, cache_size=0), TAGS)
    ids = Ids()
    grid = ids()
    planner.plan(creation(grid, 1))
    ops = planner.plan(relax_and_measure(grid, ids))
    assert all(op.kind == "compute" or op.late for op in ops)
    flusher, engine, sent = _late_flusher(1, planner.block_bytes)
    flusher._run_late(ops)
    opcodes = [[instruction.op for instruction in batch if instruction.op != "release"] for batch in engine.batches]
    assert len(sent) == 1 and opcodes[1] == ["send 1"]
    assert "sum" in opcodes[0] and "copy" in opcodes[0]
    partial = sent[0].reads[0][0]
    assert not any(instruction.op == "release" and instruction.attr("base") == partial for instruction in engine.batches[0])


def _conflicts(first: Op, second: Op) -> bool:
    def overlap(one: list, other: list) -> bool:
        return any(a[0] == b[0] and a[1] < b[2] and b[1] < a[2] for a in one for b in other)

    return overlap(first.writes, second.reads) or overlap(first.writes, second.writes) or overlap(first.reads, second.writes)


@pytest.mark.parametrize("seed", range(40))
def test_late_messages_keep_every_conflicting_pair_in_program_order(seed: int) -> None:
    """Random computations and late sends over blocks of three bases: wherever two operations
    touch the same bytes and one of them writes, the earlier in program order runs first (a
    computation when its node-engine batch is handed over, a send when it reads)."""
    import random

    chooser = random.Random(seed)
    block_bytes = {1: 64, 2: 64, 3: 64}

    def accesses(count: int) -> list[tuple[int, int, int]]:
        chosen = []
        for _ in range(count):
            low = chooser.randrange(0, 192, 8)
            chosen.append((chooser.choice((1, 2, 3)), low, low + 8 * chooser.randint(1, 8)))
        return chosen

    ops = []
    for index in range(chooser.randint(5, 30)):
        if chooser.random() < 0.25:
            ops.append(Op("send", reads=accesses(1), late=True))
        else:
            ops.append(Op("compute", reads=accesses(chooser.randint(0, 2)), writes=accesses(chooser.randint(0, 1)), instructions=[Instruction(f"op {index}", (), ())]))
    flusher, engine, sent = _late_flusher(1, block_bytes)
    flusher._run_late(ops)
    flusher.submit_batch()
    order: list[int] = []
    for batch in engine.batches:
        for instruction in batch:
            if instruction.op.startswith("send "):
                order.append(ops.index(sent[int(instruction.op.split()[1]) - 1]))
            else:
                order.append(int(instruction.op.split()[1]))
    assert sorted(order) == list(range(len(ops)))
    ran_at = {position: place for place, position in enumerate(order)}
    for earlier in range(len(ops)):
        for later in range(earlier + 1, len(ops)):
            if _conflicts(ops[earlier], ops[later]):
                assert ran_at[earlier] < ran_at[later], (earlier, later)

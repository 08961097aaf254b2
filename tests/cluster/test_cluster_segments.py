"""Long batches cut into loop iterations (``shoal/cluster/segments.py``): the parts are the batch,
each base declared once where it is first named, and planning the parts one after another with
the plan cache gives NumPy's bits on every rank (no MPI needed: ranks on reference engines,
messages through a mailbox)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from cluster.harness import PROGRAMS, assert_same_arrays, environment, load_arrays, run, run_numpy
from cluster.test_cluster_halo_simulated import TAGS, Draws, Program, gather, run_plans
from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View, make_attrs
from shoal.cluster import segments
from shoal.cluster.layout import block
from shoal.cluster.plan import PlanConfig, Planner
from shoal.engine.reference import ReferenceEngine

F8 = np.dtype("f8")


class Recording:
    """Stands for hypothesis's ``data``, keeping what was drawn."""

    def __init__(self, data: st.DataObject) -> None:
        self.data = data
        self.values: list[object] = []

    def draw(self, strategy: st.SearchStrategy) -> object:
        value = self.data.draw(strategy)
        self.values.append(value)
        return value


def looped(data: st.DataObject, rows: int, columns: int, body: int, iterations: int) -> tuple[Program, Batch]:
    """One batch: two grids from Python, then ``iterations`` times the same ``body`` random
    stencil steps (new temporaries each time), as a loop that reads nothing until its end."""
    program = Program(data, rows, columns)
    first = program.first()
    recording = Recording(data)
    program.data = recording  # type: ignore[assignment]
    steps = [program.step() for _ in range(body)]
    for _ in range(iterations - 1):
        program.data = Draws(list(recording.values))  # type: ignore[assignment]
        steps += [program.step() for _ in range(body)]
    batch = Batch(bases=list(first.bases), data=dict(first.data))
    for step in steps:
        batch.bases += step.bases
        batch.instructions += step.instructions
    return program, batch


def run_in_parts(ranks: int, halo: int, redundant: bool, batch: Batch) -> tuple[list[Planner], list[ReferenceEngine], int]:
    config = PlanConfig(min_bytes=64, cache_size=8, halo_rows=halo, redundant_rows=redundant)
    planners = [Planner(rank, ranks, config, TAGS) for rank in range(ranks)]
    engines = [ReferenceEngine() for _ in range(ranks)]
    cut = [segments.split(batch, planner.new_layouts) for planner in planners]
    assert cut[0] is not None
    assert all([(start, part.instructions) for start, part in found or ()] == [(start, part.instructions) for start, part in cut[0]] for found in cut)
    for number in range(len(cut[0])):
        run_plans([planner.plan(found[number][1]) for planner, found in zip(planners, cut)], engines)  # type: ignore[index]
    return planners, engines, len(cut[0])


@pytest.mark.full
@settings(max_examples=25, deadline=None)
@given(data=st.data(), ranks=st.integers(2, 4), halo=st.integers(0, 3), rows=st.integers(8, 24), columns=st.integers(3, 6), body=st.integers(1, 3), redundant=st.booleans())
def test_a_loop_planned_an_iteration_at_a_time_gives_numpys_bits(data: st.DataObject, ranks: int, halo: int, rows: int, columns: int, body: int, redundant: bool) -> None:
    program, batch = looped(data, rows, columns, body, iterations=max(16, -(-segments.MIN_INSTRUCTIONS // (6 * body)) + 2))
    planners, engines, parts = run_in_parts(ranks, halo, redundant, batch)
    assert parts >= 6  # a part may hold two iterations of a short body
    assert planners[0].cache.hits >= parts - 4  # alike iterations replay one plan
    for base, want in program.numpy.items():
        np.testing.assert_array_equal(gather(planners, engines, base, program.shape), want)


def sweep_batch(iterations: int, prefix: int = 0) -> Batch:
    """A Jacobi-like loop over base 1 (8 x 8, from Python), ``prefix`` fills of base 2 first."""
    stride = 64
    grid = 1
    instructions = [Instruction("fill", (View(2, F8, 0, (8,), (8,)),), (Const(0.5),)) for _ in range(prefix)]
    bases = [BaseDecl(grid, F8, 64), BaseDecl(2, F8, 8)]
    number = 10
    for _ in range(iterations):
        total, scaled = number, number + 1
        number += 2
        bases += [BaseDecl(total, F8, 36), BaseDecl(scaled, F8, 36)]
        out = View(total, F8, 0, (6, 6), (48, 8))
        instructions += [
            Instruction("add", (out,), (View(grid, F8, 0, (6, 6), (stride, 8)), View(grid, F8, 2 * stride, (6, 6), (stride, 8)))),
            Instruction("multiply", (View(scaled, F8, 0, (6, 6), (48, 8)),), (out, Const(0.5))),
            Instruction("release", (), (), make_attrs(base=total)),
            Instruction("copy", (View(grid, F8, stride + 8, (6, 6), (stride, 8)),), (View(scaled, F8, 0, (6, 6), (48, 8)),)),
            Instruction("release", (), (), make_attrs(base=scaled)),
        ]
    return Batch(bases=bases, data={grid: np.arange(64.0)}, instructions=instructions)


def flat_layouts(batch: Batch) -> dict:
    return {decl.id: block(2, decl.size, 8) for decl in batch.bases}


def test_the_period_is_the_loops_whatever_comes_before_it() -> None:
    assert segments.period(sweep_batch(20).instructions) == 5
    assert segments.period(sweep_batch(20, prefix=3).instructions) == 5
    computing = [instruction for instruction in sweep_batch(20, prefix=3).instructions if instruction.op != "release"]
    assert segments.period(computing) == 2 * 3  # at least MIN_PERIOD instructions


def test_releases_that_move_from_one_iteration_to_the_next_do_not_hide_the_period() -> None:
    batch = sweep_batch(24)
    iterations = [batch.instructions[k : k + 5] for k in range(0, len(batch.instructions), 5)]
    reordered: list[Instruction] = []
    late: list[Instruction] = []
    for number, iteration in enumerate(iterations):  # every third iteration's releases come a step later
        computing = [instruction for instruction in iteration if instruction.op != "release"]
        releases = [instruction for instruction in iteration if instruction.op == "release"]
        reordered += computing[:1] + late + computing[1:]
        late = releases if number % 3 == 0 else []
        reordered += [] if number % 3 == 0 else releases
    batch.instructions = reordered + late
    with_releases = segments.period(batch.instructions)
    assert with_releases is None or with_releases > 5  # what the releases did to a period of them all
    parts = segments.split(batch, flat_layouts)
    assert parts is not None and len(parts) >= 10
    assert [instruction for _, part in parts for instruction in part.instructions] == batch.instructions


def test_the_parts_are_the_batch_and_declare_each_base_once_where_it_is_named_first() -> None:
    batch = sweep_batch(20, prefix=3)
    parts = segments.split(batch, flat_layouts)
    assert parts is not None and len(parts) >= 9  # two iterations a part: three computing instructions each
    assert [instruction for _, part in parts for instruction in part.instructions] == batch.instructions
    assert [start for start, _ in parts] == list(np.cumsum([0] + [len(part.instructions) for _, part in parts[:-1]]))
    declared = [decl.id for _, part in parts for decl in part.bases]
    assert sorted(declared) == sorted(decl.id for decl in batch.bases)
    for _, part in parts:
        named = {view.base for instruction in part.instructions for view in (*instruction.outputs, *instruction.inputs) if isinstance(view, View)}
        assert {decl.id for decl in part.bases} <= named | {2}
        assert set(part.data) == {decl.id for decl in part.bases} & set(batch.data)
    naming = [number for number, (_, part) in enumerate(parts) if any(view.base == 1 for i in part.instructions for view in (*i.outputs, *i.inputs) if isinstance(view, View))]
    assert [number for number, (_, part) in enumerate(parts) if 1 in part.data] == naming[:1]  # the grid's data goes where it is named first
    assert parts[naming[0]][1].data[1] is batch.data[1]
    # cut where no temporary is alive: each iteration's temporaries are released in its part
    for _, part in parts[2:-1]:
        assert {decl.id for decl in part.bases} == {int(i.attr("base")) for i in part.instructions if i.op == "release"}


def test_short_or_aperiodic_batches_and_cuts_that_change_a_layout_are_not_cut() -> None:
    assert segments.split(sweep_batch(5), flat_layouts) is None  # 25 instructions
    aperiodic = sweep_batch(20)
    for position, instruction in enumerate(aperiodic.instructions):
        if instruction.op == "multiply":
            aperiodic.instructions[position] = Instruction("multiply", instruction.outputs, (instruction.inputs[0], Const(position)) if position % 3 else (instruction.inputs[0], Const(np.float32(1))))
        if instruction.op == "add" and position % 2:
            aperiodic.instructions[position] = Instruction("subtract", instruction.outputs, instruction.inputs)
    shuffled = list(np.random.default_rng(1).permutation(len(aperiodic.instructions)))
    aperiodic.instructions = [aperiodic.instructions[i] for i in shuffled]
    assert segments.period(aperiodic.instructions) is None

    def otherwise(batch: Batch) -> dict:
        whole = len(batch.instructions) == 100
        return {decl.id: block(2 if whole else 3, decl.size, 8) for decl in batch.bases}

    assert segments.split(sweep_batch(20), otherwise) is None


LOOPS = PROGRAMS / "loops.py"


@pytest.mark.full
@pytest.mark.timeout(300)
@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("kind", ["sweeps", "means"])
@pytest.mark.parametrize("mode", ["on", "off"])
def test_loops_planned_an_iteration_at_a_time_under_mpiexec_give_numpys_results(kind: str, ranks: int, mode: str, tmp_path: Path) -> None:
    expected_path = tmp_path / "numpy.npz"
    assert run_numpy(LOOPS, kind, str(expected_path)).returncode == 0
    path = tmp_path / "cluster.npz"
    result = run(ranks, LOOPS, kind, str(path), env=environment(SHOAL_STATS="1", SHOAL_LATENCY_HIDING=mode))
    assert result.returncode == 0, result.stderr[-3000:]
    assert_same_arrays(load_arrays(path), load_arrays(expected_path), reordered=frozenset({"total"}))
    parts = [int(line.split("(")[1].split()[0]) for line in result.stderr.splitlines() if "loop iterations of long ones" in line]
    assert len(parts) == ranks and min(parts) >= 24, result.stderr[-3000:]
    if kind == "means" and mode == "on":  # only reductions' results travel: one flush, iterations fused
        node_batches = [int(found) for found in re.findall(r"shoal-stats: batches=(\d+)", result.stderr)]  # the ranks write at once
        assert len(node_batches) == ranks and min(node_batches) < 24, result.stderr[-3000:]


@pytest.mark.full
@pytest.mark.timeout(300)
@pytest.mark.parametrize("ranks", [2, 3])
def test_warnings_of_a_loop_planned_an_iteration_at_a_time_are_numpys(ranks: int) -> None:
    program = PROGRAMS / "loop_warnings.py"
    plain = run_numpy(program)
    assert plain.returncode == 0, plain.stderr
    result = run(ranks, program, env=environment(SHOAL_STATS="1"))
    assert result.returncode == 0, result.stderr[-3000:]
    expected = [line for line in plain.stdout.splitlines() if line.startswith(("W ", "value"))]
    assert [line for line in result.stdout.splitlines() if line.startswith(("W ", "value"))] == expected
    assert sum(line.startswith("W ") for line in expected) == 3
    assert all(int(line.split("(")[1].split()[0]) >= 30 for line in result.stderr.splitlines() if "loop iterations of long ones" in line), result.stderr[-3000:]


def test_the_search_for_a_period_is_bounded() -> None:
    batch = sweep_batch(3000)  # 15,000 instructions: the period is found in the window
    assert segments.period(batch.instructions) == 5
    body = [Instruction("fill", (View(2, F8, 8 * k, (1,), (8,)),), (Const(0.5),)) for k in range(segments.MAX_PERIOD + 100)]
    assert segments.period(body * 3) is None  # a longer period is not looked for

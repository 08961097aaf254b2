"""A long batch's cut kept under its key (``shoal/cluster/split_plans.py``; no MPI needed).

A loop that reads nothing until its end reaches the cluster as one long batch, cut into loop
iterations on every rank. Once every rank kept the cut, rank 0 sends the next batch of that key
as its number: another rank, holding only the number, the bases and the constants, must plan
exactly what cutting and planning the whole batch afresh gives, and stop where its state does not
fit the kept plan.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View
from shoal.cluster import replayed, split_plans
from shoal.cluster.plan import Op, PlanConfig, Planner
from shoal.cluster.plan_cache import PlanCache
from tests.cluster.test_cluster_plan_cache import (
    COLUMNS,
    F8,
    ROWS,
    TAGS,
    Ids,
    creation,
    described,
    release,
    state,
    sweep,
)

SWEEPS = 12


def long_loop(grid: int, ids: Ids, first_factor: float) -> Batch:
    """``SWEEPS`` heat sweeps of ``grid`` as one batch, a new constant in every sweep."""
    batch = Batch()
    for step in range(SWEEPS):
        part = sweep(grid, ids, factor=first_factor + step / 128)
        batch.bases += part.bases
        batch.instructions += part.instructions
    return batch


def planning(planner: Planner) -> Callable[[Batch, object, object], tuple[list[Op], object]]:
    def plan_one(part: Batch, keyed: object, kept: object) -> tuple[list[Op], object]:
        return planner.plan(part, keyed, kept), planner.template  # type: ignore[arg-type]

    return plan_one


def planned(planner: Planner, batch: Batch, keyed: object) -> list[Op]:
    """The batch's operations as a rank plans them: in parts if it is cut, else whole."""
    parts = split_plans.plan_parts(planner, batch, keyed, planning(planner))  # type: ignore[arg-type]
    if parts is None:
        return planner.plan(batch, keyed)  # type: ignore[arg-type]
    return [op for _, ops, _ in parts for op in ops]


def planners(rank: int, ranks: int, halo_rows: int) -> tuple[Planner, Planner, Planner]:
    """Rank 0's planner, rank ``rank``'s (which gets replays) and one keeping no plans."""
    config = PlanConfig(min_bytes=256, cache_size=16, halo_rows=halo_rows, redundant_rows=False)
    afresh = PlanConfig(min_bytes=256, cache_size=0, halo_rows=halo_rows, redundant_rows=False)
    return Planner(0, ranks, config, TAGS), Planner(rank, ranks, config, TAGS), Planner(rank, ranks, afresh, TAGS)


def closing_gather(*ranks: Planner) -> None:
    """The end of a batch: its key gets a number if every rank kept its plan."""
    if all(planner.template is not None and planner.key is not None for planner in ranks):
        for planner in ranks:
            planner.cache.number(planner.key)  # type: ignore[arg-type]


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("halo_rows", [0, 1])
def test_a_long_batch_sent_as_its_number_plans_what_cutting_it_afresh_plans(ranks: int, halo_rows: int) -> None:
    for rank in range(1, ranks):
        root, here, afresh = planners(rank, ranks, halo_rows)
        ids = Ids()
        grid = ids()
        numbers = 0
        for number, batch in enumerate([creation(grid, 1), *(long_loop(grid, ids, 0.1 + step / 8) for step in range(4))]):
            keyed = root.keyed(batch)
            request = replayed.request(root, keyed)
            planned(root, batch, keyed)
            if request is None:
                ops = planned(here, batch, here.keyed(batch))
            else:
                numbers += 1
                skeleton, here_keyed, data_ids, _ = replayed.receive(here, request, replayed.encode_constants(batch))
                assert data_ids == [] and here_keyed[1] == keyed[1]  # type: ignore[index]
                ops = planned(here, skeleton, here_keyed)
                assert isinstance(here.template, split_plans.SplitTemplate)
            assert described(ops) == described(planned(afresh, batch, None))
            assert state(here) == state(afresh)
            if number:
                assert isinstance(root.template, split_plans.SplitTemplate) and len(root.template.parts) >= SWEEPS // 2
            closing_gather(root, here)
        assert numbers >= 2  # every long batch after the first with the halo state it leaves


def prepared(halo_rows: int = 1) -> tuple[Planner, Planner, Ids, int]:
    """Rank 0's and rank 1's planners after a creation and two long batches (the first leaves
    the halos in the state the next ones start from), the last cut numbered."""
    root, here, _ = planners(1, 2, halo_rows)
    ids = Ids()
    grid = ids()
    for batch in (creation(grid, 1), long_loop(grid, ids, 0.1), long_loop(grid, ids, 0.2)):
        for planner in (root, here):
            planned(planner, batch, planner.keyed(batch))
        closing_gather(root, here)
    return root, here, ids, grid


def test_a_kept_part_whose_bases_are_not_as_planned_stops_the_rank() -> None:
    root, here, ids, grid = prepared()
    batch = long_loop(grid, ids, 0.3)
    keyed = root.keyed(batch)
    skeleton, here_keyed, _, _ = replayed.receive(here, replayed.request(root, keyed), replayed.encode_constants(batch))  # type: ignore[arg-type]
    kept = here.cache.templates[here_keyed[0]]
    assert isinstance(kept, split_plans.SplitTemplate)
    second = kept.parts[1]
    declarations, instructions, used = second.key
    assert used  # it reads the grid, planned with its halo state
    changed = tuple((number, layout, None) for number, layout, _halo in used)
    parts = (kept.parts[0], split_plans.SplitPart(second.start, second.end, (declarations, instructions, changed), second.positions, second.template), *kept.parts[2:])
    here.cache.templates[here_keyed[0]] = split_plans.SplitTemplate(parts, kept.bases, kept.declared)
    with pytest.raises(ValueError, match=f"instructions {second.start} to {second.end} of a replayed batch meet bases whose layouts or halos"):
        planned(here, skeleton, here_keyed)


def test_a_numbered_batch_planned_whole_is_not_cut_where_only_its_operations_repeat() -> None:
    """A replay's instructions hold no views: a batch that was not cut (its views follow no
    period) must not be cut on the rank that gets it as a number because its operations do."""
    root, here, afresh = planners(1, 2, 0)
    ids = Ids()
    grid = ids()

    def scattered() -> Batch:
        temporary = ids()
        instructions = [
            Instruction("add", (View(temporary, F8, 8 * i, (1,), (8,)),), (View(grid, F8, 8 * ((7 * i) % (ROWS * COLUMNS)), (1,), (8,)), Const(1.0)))
            for i in range(80)
        ]
        return Batch(bases=[BaseDecl(temporary, F8, ROWS * COLUMNS)], instructions=[*instructions, release(temporary)])

    for batch in (creation(grid, 1), scattered()):
        for planner in (root, here):
            planned(planner, batch, planner.keyed(batch))
        closing_gather(root, here)
        afresh.plan(batch, None)
    batch = scattered()
    keyed = root.keyed(batch)
    request = replayed.request(root, keyed)
    assert request is not None
    skeleton, here_keyed, _, _ = replayed.receive(here, request, replayed.encode_constants(batch))
    assert split_plans.plan_parts(here, skeleton, here_keyed, planning(here)) is None
    assert described(here.plan(skeleton, here_keyed)) == described(afresh.plan(batch, None))


def test_a_key_kept_again_loses_its_number_until_the_ranks_agree_again() -> None:
    cache = PlanCache(4)
    cache.put(("a",), object())  # type: ignore[arg-type]
    cache.number(("a",))
    first = cache.number_of(("a",))
    assert first is not None
    cache.put(("a",), None)
    assert cache.number_of(("a",)) is None and cache.numbered(first) is None
    cache.put(("a",), object())  # type: ignore[arg-type]
    cache.number(("a",))
    assert cache.number_of(("a",)) not in (None, first)


def test_constants_of_a_replayed_cut_reach_every_part() -> None:
    root, here, ids, grid = prepared(halo_rows=0)
    batch = long_loop(grid, ids, 0.5)
    keyed = root.keyed(batch)
    skeleton, here_keyed, _, _ = replayed.receive(here, replayed.request(root, keyed), replayed.encode_constants(batch))  # type: ignore[arg-type]
    ops = planned(here, skeleton, here_keyed)
    found = {value.value for op in ops for instruction in op.instructions for value in instruction.inputs if isinstance(value, Const)}
    assert {0.5 + step / 128 for step in range(SWEEPS)} <= found
    assert np.isclose(min(found), 0.5)


@pytest.mark.full
@pytest.mark.timeout(300)
@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("mode", ["on", "off"])
def test_rounds_of_a_long_loop_sent_as_numbers_under_mpiexec_give_numpys_results(ranks: int, mode: str, tmp_path: Path) -> None:
    from cluster.harness import (
        PROGRAMS,
        assert_same_arrays,
        environment,
        load_arrays,
        run,
        run_numpy,
    )

    program = PROGRAMS / "loops.py"
    expected = tmp_path / "numpy.npz"
    assert run_numpy(program, "rounds", str(expected)).returncode == 0
    got = tmp_path / "cluster.npz"
    result = run(ranks, program, "rounds", str(got), env=environment(SHOAL_STATS="1", SHOAL_LATENCY_HIDING=mode))
    assert result.returncode == 0, result.stderr[-3000:]
    assert_same_arrays(load_arrays(got), load_arrays(expected), reordered=frozenset({"sums"}))
    numbers = [int(found) for found in re.findall(r"(\d+) sent as plan numbers", result.stderr)]
    iterations = [int(found) for found in re.findall(r"\((\d+) loop iterations of long ones", result.stderr)]
    assert len(numbers) == ranks and min(numbers) >= 4, result.stderr[-3000:]  # rounds after the halos settle
    assert len(iterations) == ranks and min(iterations) >= 8 * 8, result.stderr[-3000:]
    repeats = [int(found) for found in re.findall(r"(\d+) instructions sent as repeats", result.stderr)]
    assert len(repeats) == ranks and min(repeats) > 0, result.stderr[-3000:]  # the rounds before their key has a number

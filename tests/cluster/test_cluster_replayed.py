"""Batches sent as the number of a plan every rank keeps (no MPI needed).

Rank 0 sends a loop's batch as its plan's number and base ids once every rank kept the plan;
another rank rebuilds what replaying needs and must plan exactly what the whole batch would have
given, and refuse a command that does not fit its state.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest

from shoal.bytecode import Batch, Const, Instruction
from shoal.cluster import replayed
from shoal.cluster.plan import PlanConfig, Planner
from shoal.cluster.plan_cache import PlanCache
from tests.cluster.test_cluster_plan_cache import (
    TAGS,
    Ids,
    creation,
    described,
    reduction,
    state,
    sweep,
)


def loop(ids: Ids, grid: int, sweeps: int = 6) -> Iterator[Batch]:
    for step in range(sweeps):
        yield sweep(grid, ids, factor=0.2 + step / 64)  # a constant that changes every sweep
        yield reduction(grid, ids)


def planners(rank: int, ranks: int, halo_rows: int) -> tuple[Planner, Planner, Planner]:
    """Rank 0's planner, this rank's (which gets replays) and one planning every batch whole."""
    config = PlanConfig(min_bytes=256, cache_size=8, halo_rows=halo_rows, redundant_rows=False)
    return Planner(0, ranks, config, TAGS), Planner(rank, ranks, config, TAGS), Planner(rank, ranks, config, TAGS)


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("halo_rows", [0, 1])
def test_a_replayed_command_plans_what_the_whole_batch_plans(ranks: int, halo_rows: int) -> None:
    for rank in range(1, ranks):
        root, here, whole = planners(rank, ranks, halo_rows)
        ids = Ids()
        grid = ids()
        replays = 0
        for batch in [creation(grid, 1), *loop(ids, grid)]:
            keyed = root.keyed(batch)
            request = replayed.request(root, keyed)
            root.plan(batch, keyed)
            if request is None:
                ops = here.plan(batch)
            else:
                replays += 1
                skeleton, here_keyed, data_ids, _layouts = replayed.receive(here, request, replayed.encode_constants(batch))
                assert data_ids == [] and here_keyed[1] == keyed[1]
                assert [decl.id for decl in skeleton.bases] == [decl.id for decl in batch.bases]
                ops = here.plan(skeleton, here_keyed)
            assert described(ops) == described(whole.plan(batch))
            assert state(here) == state(whole)
            for planner in (root, here):  # the batch's closing gather: every rank kept its plan
                assert planner.template is not None
                planner.cache.number(planner.key)
        assert replays >= 8


def prepared(rank: int = 1) -> tuple[Planner, Planner, Ids, int]:
    """Rank 0's and rank ``rank``'s planners after a creation and two sweeps with sums, every
    plan numbered."""
    root, here, _ = planners(rank, 2, 0)
    ids = Ids()
    grid = ids()
    for batch in [creation(grid, 1), *loop(ids, grid, 2)]:
        for planner in (root, here):
            planner.plan(batch)
            planner.cache.number(planner.key)
    return root, here, ids, grid


def request_for(root: Planner, batch: Batch) -> list[int]:
    request = replayed.request(root, root.keyed(batch))
    assert request is not None
    return request


def test_the_next_sweep_goes_as_its_number_and_bases() -> None:
    root, here, ids, grid = prepared()
    batch = sweep(grid, ids)
    request = request_for(root, batch)
    assert request[1:] == [decl.id for decl in batch.bases] + [grid]
    skeleton, _, _, _ = replayed.receive(here, request, replayed.encode_constants(batch))
    assert [i.op for i in skeleton.instructions] == [i.op for i in batch.instructions]
    assert [i.attrs for i in skeleton.instructions if i.op == "release"] == [i.attrs for i in batch.instructions if i.op == "release"]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda r, grid, live: [r[0] + 1000, *r[1:]], "does not keep"),
        (lambda r, grid, live: [], "without the number"),
        (lambda r, grid, live: r[:-1], "distinct bases"),
        (lambda r, grid, live: [r[0], r[1], r[1], *r[3:]], "distinct bases"),
        (lambda r, grid, live: [r[0], live, *r[2:]], "live here or negative"),
        (lambda r, grid, live: [r[0], -7, *r[2:]], "live here or negative"),
        (lambda r, grid, live: [*r[:-1], live], "layouts or halos differ"),
        (lambda r, grid, live: [*r[:-1], 10**6], "layouts or halos differ"),
    ],
    ids=["unknown plan", "no number", "too few bases", "a base twice", "declares a live base", "negative id", "another base", "unknown base"],
)
def test_a_command_that_does_not_fit_this_ranks_state_is_refused(change, message: str) -> None:  # type: ignore[no-untyped-def]
    root, here, ids, grid = prepared()
    live = next(base for base in here.decls if base != grid)  # the last sum's result
    batch = sweep(grid, ids)
    request = request_for(root, batch)
    with pytest.raises(ValueError, match=message):
        replayed.receive(here, change(request, grid, live), replayed.encode_constants(batch))


def _payload(*values: object) -> bytes:
    return replayed.encode_constants(Batch(instructions=[Instruction("add", (), tuple(Const(value) for value in values))]))


@pytest.mark.parametrize(
    ("payload", "message"),
    [
        (b"", "constant 0 is missing"),
        (_payload(3), "is a int, not the float"),
        (_payload(np.float32(0.5)), "is a float32, not the float"),
        (_payload(0.5, 0.5), "bytes more than"),
        (_payload(0.5) + b"\x00", "bytes more than"),
        (_payload(0.5)[:-1], "malformed constant 0"),
        (_payload(("a", 1)), "not a scalar"),
    ],
    ids=["none", "an int", "a float32", "two", "a byte more", "a byte less", "a tuple"],
)
def test_constants_that_do_not_fit_the_plan_are_refused(payload: bytes, message: str) -> None:
    root, here, ids, grid = prepared()
    request = request_for(root, sweep(grid, ids))
    with pytest.raises(ValueError, match=message):
        replayed.receive(here, request, payload)


def test_a_replay_runs_with_its_own_constants() -> None:
    root, here, ids, grid = prepared()
    batch = sweep(grid, ids, factor=0.75)
    skeleton, keyed, _, _ = replayed.receive(here, request_for(root, batch), replayed.encode_constants(batch))
    ops = here.plan(skeleton, keyed)
    assert here.template is not None
    found = [value.value for op in ops for instruction in op.instructions for value in instruction.inputs if isinstance(value, Const)]
    assert found and set(found) == {0.75}


def test_numbers_go_only_to_plans_every_rank_kept_and_leave_with_them() -> None:
    cache = PlanCache(2)
    cache.put(("a",), None)
    cache.number(("a",))  # planned afresh each time here: no template, no number
    assert cache.number_of(("a",)) is None
    keys = [("b",), ("c",), ("d",)]
    for key in keys:
        cache.put(key, object())  # type: ignore[arg-type]
        cache.number(key)
    assert cache.number_of(("b",)) is None  # evicted with its template
    assert cache.numbered(cache.number_of(("d",))) is not None  # type: ignore[arg-type]
    numbers = [cache.number_of(key) for key in keys[1:]]
    assert numbers == sorted(numbers) and len(set(numbers)) == 2


@pytest.mark.full
@pytest.mark.timeout(300)
@pytest.mark.parametrize("hiding", ["on", "off"])
def test_a_loop_runs_on_plan_numbers_with_numpys_checksum(hiding: str) -> None:
    from cluster.harness import EXAMPLES, environment, lines, run, run_numpy

    heat = (EXAMPLES / "heat_equation.py", "300", "--max-iterations", "30")
    expected = run_numpy(*heat)
    result = run(2, *heat, env=environment(SHOAL_STATS="1", SHOAL_LATENCY_HIDING=hiding))
    assert result.returncode == 0, result.stderr[-3000:]
    (value,) = lines(result.stdout, "checksum:")
    assert float(value) == pytest.approx(float(lines(expected.stdout, "checksum:")[0]), rel=1e-9, abs=0)
    counts = [int(line.split(", ")[1].split()[0]) for line in result.stderr.splitlines() if "sent as plan numbers" in line]
    assert len(counts) == 2 and counts[0] == counts[1] >= 20, result.stderr[-3000:]

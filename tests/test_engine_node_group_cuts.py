"""Where long runs of fusible instructions are cut, and how many kernel structures a loop makes."""

from __future__ import annotations

import numpy
import pytest
from engine_node_harness import run_both
from engine_node_recorder import Recorder

import shoal.numpy as snp
from shoal import runtime
from shoal.bytecode import BaseDecl, Batch
from shoal.engine import ReferenceEngine
from shoal.engine.node.compile.kernel_cache import kernel_key
from shoal.engine.node.lower.program import lower
from shoal.engine.node.plan.group_cuts import cut_costs, cut_points
from shoal.engine.node.plan.plan import MAX_GROUP_STEPS, Group, plan_batch


class CapturingEngine(ReferenceEngine):
    """The reference engine, keeping every batch it runs."""

    def __init__(self) -> None:
        super().__init__()
        self.batches: list[Batch] = []

    def execute(self, batch: Batch) -> None:
        self.batches.append(batch)
        super().execute(batch)


def cumulative_normal(np, x):
    a1, a2, a3, a4, a5 = 0.319381530, -0.356563782, 1.781477937, -1.821255978, 1.330274429
    k = 1.0 / (1.0 + 0.2316419 * np.abs(x))
    polynomial = k * (a1 + k * (a2 + k * (a3 + k * (a4 + k * a5))))
    upper = 1.0 - np.exp(-0.5 * x * x) / np.sqrt(2.0 * np.pi) * polynomial
    return np.where(x < 0.0, 1.0 - upper, upper)


def price(np, spot, strike, years):
    root = np.sqrt(years)
    d1 = (np.log(spot / strike) + (0.02 + 0.5 * 0.3**2) * years) / (0.3 * root)
    d2 = d1 - 0.3 * root
    discounted = strike * np.exp(-0.02 * years)
    call = spot * cumulative_normal(np, d1) - discounted * cumulative_normal(np, d2)
    put = discounted * cumulative_normal(np, -d2) - spot * cumulative_normal(np, -d1)
    return call, put


def black_scholes(np, size: int, days: int) -> float:
    """examples/black_scholes.py: every day one formula of 111 fusible instructions."""
    rng = numpy.random.default_rng(7)
    spot, strike, years = (np.array(rng.uniform(low, 100.0, size)) for low in (10.0, 10.0, 0.5))
    total = 0.0
    for day in range(days):
        call, put = price(np, spot, strike, years - day / 365.0)
        total += np.mean(call) + np.mean(put)
    return float(total)


def kernel_structures(batches: list[Batch]) -> tuple[int, set[str]]:
    """How many fusion groups the node engine plans for ``batches``, and their kernel keys."""
    known: dict[int, BaseDecl] = {}
    groups = 0
    keys: set[str] = set()
    for batch in batches:
        known.update((decl.id, decl) for decl in batch.bases)
        plan = plan_batch(batch, known)
        for step in plan.steps:
            if isinstance(step, Group):
                groups += 1
                keys.add(kernel_key(lower(step, plan.temporaries, 1 << 16).structure()))
        for instruction in batch.instructions:
            if instruction.op == "release":
                known.pop(instruction.attr("base"), None)
    return groups, keys


@pytest.mark.parametrize(("flush_threshold", "expected"), [(100_000, 3), (2048, 5)])
def test_black_scholes_days_share_their_kernel_structures(flush_threshold, expected):
    """A day is 111 fusible instructions, two kernels of at most 64. Cut every 64 instructions,
    the days' cuts drifted and 12 days made 21 structures in one batch (22 in batches of ~2048).
    Now every day is cut alike: one batch makes the day's two structures plus the last day's
    second one, whose results outlive the batch; a batch ending mid-day adds two more, for the
    part days at its end and at the next one's start."""
    engine = CapturingEngine()
    with runtime.configure(engine=engine, eager_threshold=0, flush_threshold=flush_threshold):
        got = black_scholes(snp, 1000, 12)
    assert got == pytest.approx(black_scholes(numpy, 1000, 12), rel=1e-12)
    groups, keys = kernel_structures(engine.batches)
    assert groups >= 12 * 111 // MAX_GROUP_STEPS  # the days ran fused
    assert len(keys) == expected


def test_a_cut_costs_the_bytes_of_the_arrays_live_across_it():
    rec = Recorder()
    a = rec.array(numpy.arange(8.0))  # 64 bytes, as every array here
    b = rec.ufunc("sqrt", a)  # 0
    c = rec.ufunc("add", b, 1.0)  # 1
    d = rec.ufunc("multiply", a, c)  # 2
    rec.ufunc("negative", d)  # 3
    instructions = rec.batch.instructions
    # a is live from the start (it existed before) to 2, b from 0 to 1, c 1-2, d 2-3.
    assert cut_costs(instructions, set()) == [0, 128, 128, 64, 0]
    # b used after the run: live to its end.
    assert cut_costs(instructions, {b.base}) == [0, 128, 192, 128, 64]


def test_runs_are_cut_at_their_cheapest_points_within_the_limit():
    rec = Recorder()
    x = rec.array(numpy.arange(8.0))
    for _ in range(3):  # three chains of 4 reading x, which outlives them: cut between chains
        value = rec.ufunc("add", x, 1.0)
        for _ in range(3):
            value = rec.ufunc("multiply", value, 2.0)
    instructions = rec.batch.instructions
    assert cut_points(instructions, 6, {x.base}) == [4, 8]
    assert cut_points(instructions, 12, {x.base}) == []
    with pytest.raises(ValueError, match="at least one instruction"):
        cut_points(instructions, 0, set())


def test_a_run_longer_than_the_limit_is_cut_into_groups_no_longer_than_it():
    rec = Recorder()
    value = rec.array(numpy.arange(8.0))
    for _ in range(3 * MAX_GROUP_STEPS):
        value = rec.ufunc("add", value, 1.0)
    plan = plan_batch(rec.batch, rec.known)
    sizes = [len(step.instructions) for step in plan.steps if isinstance(step, Group)]
    assert sum(sizes) == 3 * MAX_GROUP_STEPS
    assert max(sizes) <= MAX_GROUP_STEPS


def test_a_long_in_place_loop_with_reductions_matches_the_reference_when_cut():
    def program(rec):
        a = rec.array(numpy.linspace(0.0, 1.0, 300))
        sums = []
        for step in range(2 * MAX_GROUP_STEPS):
            rec.emit("multiply" if step % 2 else "add", (a,), (a, 1.25 if step % 2 else -0.5))
            if step % 16 == 0:
                sums.append(rec.reduce("sum", a))
        return [a, *sums]

    stats = run_both(program, block=64, exact=False).last_stats
    assert stats.kernels >= 3  # the loop ran fused, cut into pieces of at most MAX_GROUP_STEPS

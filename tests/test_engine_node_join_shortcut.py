"""The planner's join shortcut plans exactly what comparing every pair of accesses plans.

An instruction whose bases are each touched through one mapping (in it and in the open group)
joins a fusion group without the pairwise clash check (``plan._one_mapping_per_base``). Every
batch of the engine programs and NumPy loops here is planned twice, with the shortcut and with
the pairwise check alone, and the two plans must be step for step the same.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from engine_node_harness import run_both
from engine_node_recorder import Recorder
from numpy_fixtures import AGAINST_NUMPY
from program_runs import assert_same_run, run_program
from test_engine_node_axis_reductions import element_wise_then, lattice_macroscopic
from test_engine_node_deferred import heat_sweep, shifted_update
from test_engine_node_differential import jacobi

import shoal.numpy
from shoal import runtime
from shoal.bytecode import Batch
from shoal.engine.node import NodeConfig, NodeEngine
from shoal.engine.node import engine as node_engine
from shoal.engine.node.plan import plan as planning
from shoal.engine.node.plan.plan import CopyChain, Group, Plan, Release, WholeOp

pytestmark = pytest.mark.skipif(AGAINST_NUMPY, reason="runs the Shoal runtime")
RNG = np.random.default_rng(7)



def _lattice(rec: Recorder):
    populations = rec.array(RNG.random((9, 12, 70)))
    return list(lattice_macroscopic(rec, populations))


def _heat(rec: Recorder):
    grid = rec.array(RNG.random((30, 20)))
    work, delta, *temporaries = heat_sweep(rec, grid, (28, 18))
    rec.release(*temporaries)
    return [grid, work, delta]


PROGRAMS = [
    jacobi(4),
    _heat,
    _lattice,
    shifted_update(6, 9, [(-1, 0), (1, 0), (0, -1), (0, 1)], False),
    shifted_update(6, 9, [(-1, 1), (2, -1)], True),
    shifted_update(4, 30, [(0, -2), (0, 1)], False),
    element_wise_then("sum", np.dtype("float64"), (8, 70), False, axis=1),
]


def _shape_of(plan: Plan) -> list:
    """What a plan decides: each step's kind and instructions (by identity), a group's accesses
    and what it postponed, and the plan's temporaries and aliases."""
    steps: list[tuple] = []
    for step in plan.steps:
        if isinstance(step, Group):
            accesses = {base: list(found) for base, found in step.accesses.items()}
            steps.append(("group", step.shape, [id(i) for i in step.origins], accesses, [id(i) for i in step.postponed], dict(step.deferred)))
        elif isinstance(step, WholeOp):
            steps.append(("whole", id(step.instruction)))
        elif isinstance(step, CopyChain):
            steps.append(("copies", [id(i) for i in step.instructions]))
        else:
            assert isinstance(step, Release)
            steps.append(("release", step.base))
    return [steps, sorted(plan.temporaries), sorted(plan.aliases)]


def _checking(planned: list[int]):
    original = planning.plan_batch

    def plan_twice(batch: Batch, known: dict) -> Plan:
        fast = original(batch, known)
        with mock.patch.object(planning, "_one_mapping_per_base", lambda group, new: False):
            pairwise = original(batch, known)
        assert _shape_of(fast) == _shape_of(pairwise)
        planned.append(len(batch.instructions))
        return fast

    return plan_twice


def _answers():
    """A list of the shortcut's answers and a stand-in for it that notes each."""
    taken: list[bool] = []
    original = planning._one_mapping_per_base

    def noting(group, new):
        answer = original(group, new)
        taken.append(answer)
        return answer

    return taken, noting


@pytest.mark.parametrize("program", PROGRAMS)
def test_engine_programs_plan_alike_with_and_without_the_shortcut(program):
    planned: list[int] = []
    with mock.patch.object(node_engine, "plan_batch", _checking(planned)):
        run_both(program, block=16, exact=False)
    assert planned  # the comparison ran


def test_loop_bodies_plan_alike_and_take_the_shortcut_and_the_pairwise_check():
    """Whole NumPy loops (every array lazy, batches of up to 2,048 instructions): a Jacobi
    ping-pong, an in-place stencil, an FDTD step and a Black-Scholes-like chain."""
    source = """
a = np.array(D[0]); b = np.array(D[1]); c = np.array(D[2]); v = np.array(D[3])
for k in range(6):
    b[1:-1] = (a[:-2] + a[1:-1] + a[2:]) / 3.0
    a[1:-1] = (b[:-2] + b[1:-1] + b[2:]) / 3.0
    c[1:-1, 1:-1] = 0.25 * (c[:-2, 1:-1] + c[2:, 1:-1] + c[1:-1, :-2] + c[1:-1, 2:])
    a[1:, :] -= 0.5 * (c[1:, :] - c[:-1, :])
    b[:, 1:] -= 0.5 * (c[:, 1:] - c[:, :-1])
    d = np.sqrt(np.abs(a)) * np.exp(-0.5 * b * b) + np.where(a < 0.0, 1.0 - c, c)
    v = v + np.sum(d, axis=0) / np.max(np.abs(d))
read(a); read(b); read(c); read(v)
"""
    inputs = [RNG.uniform(-1, 1, (40, 60)) for _ in range(3)] + [RNG.uniform(-1, 1, 60)]
    planned: list[int] = []
    taken, noting = _answers()
    engine = NodeEngine(NodeConfig(threads=2, block_size=256, compile="off", direct_work="0"))
    with mock.patch.object(node_engine, "plan_batch", _checking(planned)), mock.patch.object(planning, "_one_mapping_per_base", noting):
        with runtime.configure(engine=engine, eager_threshold=0, flush_threshold=2048, settled_threshold=0):
            got = run_program(source, shoal.numpy, inputs)
    expected = run_program(source, np, inputs)
    assert_same_run(got, expected, "node engine vs NumPy")
    assert planned and max(planned) > 100
    assert True in taken and False in taken


def test_the_shortcut_is_taken_and_refused_where_it_must_be():
    """A fresh result and inputs read alike take the shortcut; an in-place shifted update (two
    mappings of one base) does not, and still gets the pairwise verdict."""
    taken, noting = _answers()

    def program(rec):
        a = rec.array(np.arange(64.0))
        b = rec.ufunc("multiply", a, 2.0)
        rec.emit("add", (rec.index(a, slice(1, 63)),), (rec.index(a, slice(0, 62)), rec.index(b, slice(1, 63))))
        return [a, b]

    with mock.patch.object(planning, "_one_mapping_per_base", noting):
        run_both(program, block=16, exact=True)
    assert taken[:2] == [True, False]

"""Batches past the size threshold end where the previous one began, so a loop's batches share
one structure and the node engine replays its plan; results stay NumPy's."""

from __future__ import annotations

import numpy
import pytest

import shoal
import shoal.numpy as snp
from shoal import runtime
from shoal.batch_boundary import BatchBoundary
from shoal.bytecode import Const, Instruction, View
from shoal.engine.node import NodeEngine


def instruction(op: str, offset: int = 0) -> Instruction:
    view = View(1, numpy.dtype(numpy.float64), offset, (4,), (8,))
    return Instruction(op, (view,), (view, Const(1.0)))


def cut(stream: list[Instruction], threshold: int, window: int) -> list[list[Instruction]]:
    """Split ``stream`` the way the runtime does with a ``BatchBoundary``."""
    boundary = BatchBoundary(window)
    batches, pending = [], []
    for item in stream:
        pending.append(item)
        if len(pending) >= threshold and boundary.due(pending, threshold):
            boundary.flushed(pending)
            batches.append(pending)
            pending = []
    return batches


def test_a_periodic_stream_is_cut_at_one_phase():
    period = [instruction(op, offset) for op, offset in [("add", 0), ("multiply", 8), ("subtract", 0), ("add", 16), ("divide", 0)]]
    stream = [instruction("sqrt")] * 3 + period * 40
    batches = cut(stream, threshold=12, window=4)
    assert len(batches[0]) == 12
    later = batches[1:]
    assert len(later) > 5 and all(len(batch) == 15 for batch in later)  # 3 whole periods each
    assert all(batch == later[0] for batch in later)


def test_without_a_repeat_a_batch_ends_at_twice_the_threshold():
    stream = [instruction("add", 8 * n) for n in range(100)]
    assert [len(batch) for batch in cut(stream, threshold=10, window=4)] == [10, 20, 20, 20, 20]


def test_a_short_batch_leaves_the_next_one_at_the_threshold():
    boundary = BatchBoundary(window=4)
    boundary.flushed([instruction("add")] * 2)
    assert boundary.due([instruction("multiply")] * 6, threshold=6)


@pytest.fixture
def node(monkeypatch):
    monkeypatch.setenv("SHOAL_BLOCK_SIZE", "64")
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    monkeypatch.setenv("SHOAL_DIRECT_WORK", "0")
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=40, settled_threshold=0) as rt:
        assert isinstance(rt.engine, NodeEngine)
        yield rt


def shallow_steps(np, field, steps):
    """A loop body of a few dozen instructions with in-place boundary updates."""
    for _ in range(steps):
        field[0, :] = -field[1, :]
        field[-1, :] = field[-2, :]
        middle = 0.25 * (field[:-2, 1:-1] + field[2:, 1:-1] + field[1:-1, :-2] + field[1:-1, 2:])
        field[1:-1, 1:-1] = 0.5 * field[1:-1, 1:-1] + 0.5 * middle
    return field


def test_a_loop_replays_its_plan_and_matches_numpy(node):
    start = numpy.random.default_rng(3).random((30, 26))
    expected = shallow_steps(numpy, start.copy(), 30)
    replayed = []
    original = node.engine.execute

    def execute(batch):
        original(batch)
        replayed.append(node.engine.last_stats.replayed)

    node.engine.execute = execute
    got = shallow_steps(snp, snp.array(start), 30)
    shoal.flush()
    numpy.testing.assert_array_equal(numpy.asarray(got), expected)
    # The first batch ends at the threshold, the second where the loop repeats what preceded
    # it (here at twice the threshold: the first iteration releases nothing), then one structure.
    assert len(replayed) >= 7 and all(replayed[3:-1])

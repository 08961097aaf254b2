"""Large element-wise calls of a direct batch shared by rows among the engine's threads
(``shoal/engine/node/run/row_parts.py``): results bit for bit the reference engine's, work shared
only where rows are independent and the output's memory is already there, and NumPy's
floating-point warnings once, at the program's line."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from engine_node_recorder import Recorder, direct_against_reference
from numpy_fixtures import same_values_and_warnings

from shoal.engine.blocks.thread_pool import WorkerPool
from shoal.engine.node.run import row_parts

RNG = np.random.default_rng(11)
ROWS = 1500  # 1500 x 1500 = 2.25M elements: above two threads' shares of a plain call


def _shared(program, monkeypatch, threads: int = 2) -> list[set[str]]:
    """Run ``program``'s batch directly on the node engine and on the reference engine, compare,
    and return, for every call whose rows were shared, the names of the threads that ran them."""
    calls: list[set[str]] = []
    run_shares = row_parts.run_shares

    def spying(pool, ranges, run):
        if len(ranges) < 2:
            return run_shares(pool, ranges, run)
        names: set[str] = set()

        def named(start, stop):
            names.add(threading.current_thread().name)
            return run(start, stop)

        calls.append(names)
        return run_shares(pool, ranges, named)

    monkeypatch.setattr("shoal.engine.node.run.direct.run_shares", spying)
    monkeypatch.setattr("shoal.engine.node.run.chunked_pairs.run_shares", spying)
    recorder = Recorder()
    checked = program(recorder)
    direct_against_reference(recorder.new_batch(), checked, threads)
    return calls


def _owned(rec: Recorder, values: np.ndarray):
    """A base with ``values`` in the engine's own memory (a batch's data is copied before it is
    written, so an in-place call on it reads the copy): a new output, computed whole."""
    return rec.ufunc("add", rec.array(values), values.dtype.type(0))


def test_a_rank_one_update_in_place_is_shared_by_two_threads(monkeypatch):
    def program(rec):
        a = rec.array(RNG.random((1000, 1000)))
        column, row = rec.array(RNG.random((1000, 1))), rec.array(RNG.random((1, 999)))
        target = rec.index(a, (slice(None), slice(1, None)))
        outer = rec.ufunc("multiply", column, row)
        rec.emit("subtract", (target,), (target, outer))
        rec.release(outer)
        return [a]

    calls = _shared(program, monkeypatch)
    assert len(calls) == 1 and len(calls[0]) == 2


@pytest.mark.parametrize("dtype", ["float64", "float32", "int32", "complex128"])
def test_large_calls_into_existing_memory_are_shared_and_match_numpy(monkeypatch, dtype):
    def program(rec):
        a = rec.array((RNG.random((ROWS, ROWS)) * 100).astype(dtype))
        row = rec.array((RNG.random(ROWS) * 10).astype(dtype))
        rec.emit("multiply", (a,), (a, 3))
        rec.emit("add", (a,), (a, row))  # a broadcast operand stays whole in every share
        cube = _owned(rec, (RNG.random((4, 800, 800)) * 10).astype(dtype))
        rec.emit("subtract", (cube,), (cube, rec.index(cube, (0,))))  # reads the first share's rows
        return [a, cube]

    calls = _shared(program, monkeypatch)
    assert len(calls) == 2  # the cube's call reads rows the first share writes: whole
    assert all(len(names) == 2 for names in calls)


def test_calls_that_are_not_shared(monkeypatch):
    """A new output (its pages untouched), rows that read rows another share writes, a small
    call, and an engine of one thread: every call whole."""

    def program(rec):
        a = _owned(rec, RNG.random((ROWS, ROWS)))
        fresh = rec.ufunc("add", a, 1.0)
        rec.emit("add", (rec.index(a, (slice(1, None),)),), (rec.index(a, (slice(1, None),)), rec.index(a, (slice(None, -1),))))
        small = rec.array(RNG.random((500, 500)))
        rec.emit("multiply", (small,), (small, 2.0))
        return [a, fresh, small]

    assert _shared(program, monkeypatch) == []

    def one_thread(rec):
        a = rec.array(RNG.random((ROWS, ROWS)))
        rec.emit("multiply", (a,), (a, 2.0))
        return [a]

    assert _shared(one_thread, monkeypatch, threads=1) == []


def test_a_condition_met_in_every_share_warns_once_at_numpys_line(monkeypatch):
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    monkeypatch.setenv("SHOAL_DIRECT_WORK", str(1 << 40))
    monkeypatch.setenv("SHOAL_NUM_THREADS", "2")
    shared: list[int] = []
    run_shares = row_parts.run_shares

    def counting(pool, ranges, run):
        shared.append(len(ranges))
        return run_shares(pool, ranges, run)

    monkeypatch.setattr("shoal.engine.node.run.direct.run_shares", counting)

    def program(np_):
        a = np_.zeros((ROWS, ROWS)) + np_.linspace(0.0, 1.0, ROWS)  # a zero in every row
        b = np_.ones((ROWS, ROWS))
        b /= a  # divide by zero in both threads' rows
        return b

    same_values_and_warnings(program, engine="node", eager_threshold=0, settled_threshold=0)
    assert 2 in shared


def test_each_runs_the_first_call_here_and_reports_every_error_in_order():
    pool = WorkerPool(2)
    ran: list[tuple[int, str]] = []

    def call(number: int, fails: bool):
        def run() -> None:
            ran.append((number, threading.current_thread().name))
            if fails:
                raise ValueError(f"call {number}")

        return run

    try:
        errors = pool.each([call(0, False), call(1, True), call(2, True)])
    finally:
        pool.close()
    assert [error is None for error in errors] == [True, False, False]
    assert [str(error) for error in errors[1:]] == ["call 1", "call 2"]
    assert dict(ran)[0] == threading.current_thread().name
    assert sorted(number for number, _ in ran) == [0, 1, 2]

"""Loops whose batches repeat the previous batch's structure (the node engine takes over its key,
``shoal/engine/node/schedule/repeat.py``), and iterations where the repeat must not apply.

Every program reads a value each iteration, so each iteration is a batch of its own; most
iterations repeat the previous one, and iteration ``K`` changes one thing: a shape, a dtype, the
aliasing of operands, a view that would leave its base, an error raised at the user's line, a
floating-point warning at the recording line, a constant of another kind. Every read, its dtype,
every exception (type, text, line) and every warning (text, line) must be NumPy's, on the node
engine (blocks planned, and instruction by instruction) and the reference engine; on the node
engine the other iterations must have repeated.
"""

from __future__ import annotations

import sys
import traceback
import warnings

import numpy
import pytest
from numpy_fixtures import assert_reads_equal

import shoal.numpy as snp
from shoal import runtime
from shoal.engine.node import NodeConfig, NodeEngine

ITERATIONS = 8
K = 5  # the iteration that changes


@pytest.fixture(params=["planned", "direct", "reference"])
def lazy(request):
    if request.param == "reference":
        engine: object = "reference"
    else:
        engine = NodeEngine(NodeConfig(threads=1, compile="off", direct_work=0 if request.param == "planned" else 1 << 22))
    with runtime.configure(engine=engine, eager_threshold=0, settled_threshold=0) as rt:
        yield rt
        if isinstance(engine, NodeEngine):
            assert engine.repeated >= 1, "the loop's batches should have repeated"


def _line_in_this_file(error: BaseException) -> int:
    return [frame.lineno for frame in traceback.extract_tb(error.__traceback__) if frame.filename == __file__][-1]


def _run(np, program):
    """Every value ``program`` reads, then its error (type, text, line) if any, and its
    warnings (category, text, line)."""
    reads: list = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            program(np, reads)
        except Exception as error:
            reads.append((type(error), str(error), _line_in_this_file(error)))
        if np is snp:
            runtime.flush()
    seen = [(warning.category, str(warning.message), warning.lineno) for warning in caught if warning.filename == __file__]
    return [read if isinstance(read, tuple) else numpy.asarray(read) for read in reads], seen


def same(program):
    (expected, expected_warnings), (got, got_warnings) = _run(numpy, program), _run(snp, program)
    assert_reads_equal(expected, got)
    assert got_warnings == expected_warnings


def test_a_shape_change(lazy):
    def program(np, reads):
        a = np.linspace(0.0, 1.0, 12)
        for i in range(ITERATIONS):
            x = a[: 6 if i == K else 12] * 2.0 + 1.0
            reads.append(numpy.array(x.sum()))

    same(program)


def test_a_dtype_change(lazy):
    def program(np, reads):
        a = np.linspace(0.0, 1.0, 12)
        b = a.astype(np.float32)
        for i in range(ITERATIONS):
            x = (b if i == K else a) * 3.0 - a
            reads.append(numpy.array(x))

    same(program)


def test_aliasing_that_differs_between_iterations(lazy):
    def program(np, reads):
        x = np.arange(10.0)
        y = np.zeros(10)
        for i in range(ITERATIONS):
            target = x if i == K else y
            target[1:] = x[:-1] + 1.0  # overlapping in place only at iteration K
            reads.append(numpy.array(x.copy()))
            reads.append(numpy.array(y[3]))

    same(program)


def test_an_operand_that_becomes_the_other(lazy):
    def program(np, reads):
        a = np.linspace(1.0, 2.0, 9)
        b = np.linspace(3.0, 4.0, 9)
        for i in range(ITERATIONS):
            c = a * (a if i == K else b)
            c += 1.0
            reads.append(numpy.array(c))

    same(program)


def test_a_view_that_would_leave_its_base(lazy):
    def program(np, reads):
        a = np.arange(16.0)
        for i in range(ITERATIONS):
            start = {K - 1: 8, K: 14}.get(i, 4)  # moved at iteration K - 1, clamped to 2 elements at K
            reads.append(numpy.array(a[start : start + 4] * 2.0))
            reads.append(numpy.array(a[3 + (20 if i == K + 1 else 0)]))  # out of range at iteration K + 1

    same(program)


def test_an_error_in_iteration_k_at_the_users_line(lazy):
    def program(np, reads):
        a = np.linspace(0.0, 1.0, 10)
        b = np.ones(10)
        for i in range(ITERATIONS):
            c = a + (b[:7] if i == K else b)
            reads.append(numpy.array(c.sum()))

    same(program)


def test_a_floating_point_error_raised_in_iteration_k(lazy):
    def program(np, reads):
        a = np.linspace(1.0, 2.0, 10)
        for i in range(ITERATIONS):
            with np.errstate(divide="raise" if i == K else "ignore"):
                c = 1.0 / (a - (1.0 if i >= K else 0.0))
            reads.append(numpy.array(c[1]))

    same(program)


def test_warnings_at_the_recording_lines(lazy):
    def program(np, reads):
        a = np.linspace(0.0, 1.0, 10)
        for i in range(ITERATIONS):
            b = a - (a[0] if i == K else -1.0)
            c = np.log(b)  # divide by zero at iteration K only
            d = np.sqrt(c - (10.0 if i == K + 1 else 0.0))  # invalid at iteration K + 1 only
            reads.append(numpy.array(d[1:].sum()))

    same(program)


def test_a_constant_that_changes_kind(lazy):
    def program(np, reads):
        a = np.arange(12, dtype=np.int16)
        constants = [3, 5, 7, 9, 2.5, 1.5, np.float32(2.0), True, False, 3, 2**20, np.int8(3), 4, 6]
        for i in range(len(constants)):
            x = a * constants[i] + 1
            reads.append(numpy.array(x))

    same(program)


@pytest.mark.skipif(sys.flags.optimize > 0, reason="asserts")
def test_a_row_loop_of_a_replayed_body_matches_numpy(lazy):
    def program(np, reads):
        grid = np.linspace(0.0, 1.0, 64).reshape(8, 8)
        for _ in range(4):
            for i in range(1, 7):
                grid[i, 1:-1] = 0.25 * (grid[i - 1, 1:-1] + grid[i + 1, 1:-1] + grid[i, :-2] + grid[i, 2:])
            reads.append(numpy.array(grid.sum()))

    same(program)

"""Lazy arrays of ``shoal.numpy`` passed to tasks, as a program run with ``python -m shoal`` does:
NumPy's results, versions chained through the same array, the program's writes seen by later
tasks, and a clear error where the arrays live in another process (``shoal.numpy._task_values``).
Before, the README's own example failed there: ``parameter 'a' is marked recurrent read-only,
which needs a NumPy array, got ndarray``."""

from __future__ import annotations

import numpy
import pytest
from task_fixtures import no_shoal_segments, no_task_helpers_left, runtime  # noqa: F401

import shoal.numpy as snp
from shoal import runtime as shoal_runtime
from shoal.tasks import IN, INOUT, barrier, delete, task, wait_on

pytestmark = [pytest.mark.full, pytest.mark.timeout(120)]

SIDE = 256


@task(a={"direction": IN, "rro": True}, b={"direction": IN, "rro": True}, c=INOUT)
def multiply(a, b, c):
    c += a @ b


@task()
def total(x):
    return float(x.sum())


def _matrices() -> tuple[numpy.ndarray, numpy.ndarray]:
    rng = numpy.random.default_rng(3)
    return rng.random((SIDE, SIDE)) - 0.5, rng.random((SIDE, SIDE))


@pytest.fixture
def lazy():
    with shoal_runtime.configure(engine="node", eager_threshold=1024) as rt:
        yield rt


def test_the_readmes_example_with_lazy_arrays_gives_numpys_result(runtime, lazy):  # noqa: F811
    a, b = _matrices()
    A, B, C = snp.array(a) * 2.0, snp.array(b) + 0.0, snp.zeros((SIDE, SIDE))
    multiply(A, B, C)
    multiply(A, B, C)  # reads the version the first call wrote
    result = wait_on(C)
    barrier()
    numpy.testing.assert_allclose(result, 2 * ((a * 2.0) @ b), rtol=1e-12)
    delete(A)
    delete(B)
    delete(C)


def test_a_write_through_the_lazy_array_reaches_later_tasks(runtime, lazy):  # noqa: F811
    a, _b = _matrices()
    A = snp.array(a) * 1.0
    first = total(A)
    A[0, :] = 1000.0  # as with a NumPy array: the next task sees it
    A *= 2.0
    second = total(A)
    expected = a.copy()
    assert wait_on(first) == pytest.approx(float(expected.sum()), rel=1e-12)
    expected[0, :] = 1000.0
    assert wait_on(second) == pytest.approx(float((expected * 2.0).sum()), rel=1e-12)
    assert wait_on(total(snp.array(a).sum() * 1.0 + snp.zeros(2000))) == pytest.approx(2000 * float(a.sum()), rel=1e-9)
    delete(A)


def test_arrays_kept_in_another_process_are_refused_with_a_clear_error(runtime):  # noqa: F811
    from proxy_harness import client_for, live_server

    a, _b = _matrices()
    with live_server() as server, shoal_runtime.configure(engine=client_for(server), eager_threshold=1024):
        remote = snp.array(a) * 2.0
        with pytest.raises(TypeError, match="must live in this process's memory"):
            total(remote)
        assert wait_on(total(numpy.array(remote))) == pytest.approx(float((a * 2.0).sum()), rel=1e-12)


def test_a_first_sight_snapshot_outlives_a_change_made_before_its_task_ran(runtime):  # noqa: F811
    """Plain NumPy too: passing an array again after changing it in place made a segment of it
    and removed the first call's snapshot, which that call's worker had not mapped yet
    (``FileNotFoundError`` from the first task)."""
    a, _b = _matrices()
    array = a * 1.0  # 512 KiB: sent through a first-sight snapshot
    first = total(array)
    array[0, :] = 1000.0
    array *= 2.0
    second = total(array)  # a second read: the array goes into a segment of its own
    changed = a.copy()
    changed[0, :] = 1000.0
    assert wait_on(second) == pytest.approx(float((changed * 2.0).sum()), rel=1e-12)
    assert wait_on(first) == pytest.approx(float(a.sum()), rel=1e-12)
    delete(array)

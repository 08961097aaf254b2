"""The task runtime end to end: values, directions, shared memory, errors."""

from __future__ import annotations

import os
import re

import numpy as np
import pytest
from task_fixtures import shoal_segments

import shoal.tasks as tasks
from shoal.tasks import IN, INOUT, barrier, delete, task, wait_on
from shoal.tasks import shm as shm_store

pytestmark = [pytest.mark.full, pytest.mark.timeout(60)]




@task(c=INOUT, returns=0)
def multiply_add(a, b, c):
    c += a @ b


@task()
def add(x, y):
    return x + y


@task(returns=2)
def split(x):
    return x, -x


@task(a={"direction": IN, "rro": True})
def inspect_shared(a):
    return (float(a.sum()), bool(a.flags.writeable), bool(a.flags.owndata))


@task()
def inspect_plain(a):
    return (float(a.sum()), bool(a.flags.writeable), os.getpid())


@task()
def produce(n):
    return np.full(n, 2.0)


@task()
def where_am_i(a):
    return os.getpid()


@task()
def fail_with(message):
    raise KeyError(message)


@task(items=INOUT)
def append(items, value):
    items.append(value)
    return len(items)


def test_blocked_matmul_matches_numpy(runtime):
    rng = np.random.default_rng(0)
    blocks, size = 3, 8
    a = [[rng.standard_normal((size, size)) for _ in range(blocks)] for _ in range(blocks)]
    b = [[rng.standard_normal((size, size)) for _ in range(blocks)] for _ in range(blocks)]
    c = [[np.zeros((size, size)) for _ in range(blocks)] for _ in range(blocks)]
    for r in range(blocks):
        for col in range(blocks):
            for i in range(blocks):
                multiply_add(a[r][i], b[i][col], c[r][col])
    result = np.block([[wait_on(c[r][col]) for col in range(blocks)] for r in range(blocks)])
    np.testing.assert_allclose(result, np.block(a) @ np.block(b))
    assert not np.any(np.block(c))  # the caller's objects stay version 0


def test_futures_chain_returns_and_lists(runtime):
    first = add(1, 2)
    second = add(first, 10)
    positive, negative = split(second)
    assert wait_on([positive, negative, 7]) == [13, -13, 7]
    assert wait_on((first,)) == (3,)
    assert second.done()


def test_inout_on_a_python_object_makes_versions(runtime):
    items = [0]
    lengths = [append(items, value) for value in (1, 2, 3)]
    assert wait_on(lengths) == [2, 3, 4]
    assert wait_on(items) == [0, 1, 2, 3]
    assert items == [0]


def test_barrier_waits_for_all(runtime):
    results = [add(i, i) for i in range(50)]
    barrier()
    assert all(future.done() for future in results)
    assert wait_on(results) == [2 * i for i in range(50)]


def test_exception_reraises_with_remote_traceback_and_worker(runtime):
    future = fail_with("missing")
    with pytest.raises(KeyError, match="missing") as raised:
        wait_on(future)
    assert isinstance(raised.value.__cause__, tasks.RemoteTraceback)
    assert "in fail_with" in raised.value.__cause__.text
    notes = " ".join(raised.value.__notes__)
    assert re.search(r"fail_with#\d+ on worker \d+ \(pid \d+\)", notes)
    dependent = add(future, 1)
    with pytest.raises(tasks.TaskDependencyError, match="did not run"):
        wait_on(dependent)
    assert wait_on(add(1, 1)) == 2  # the runtime keeps working


def test_rro_gives_zero_copy_read_only_view(runtime):
    data = np.arange(1000.0)
    first = inspect_shared(data)
    names = runtime.segment_names
    assert len(names) == 1
    assert re.fullmatch(rf"shoal-{re.escape(runtime.job)}-\d+-v0-[0-9a-f]{{16}}", names[0])
    total, writeable, owndata = wait_on(first)
    assert (total, writeable, owndata) == (data.sum(), False, False)
    assert wait_on(inspect_shared(data)) == (data.sum(), False, False)
    assert data.flags.writeable  # an explicit flag is the caller's promise: nothing locked
    delete(data)
    assert runtime.segment_names == [] and shoal_segments() == []


@task(a={"direction": IN, "rro": True})
def shared_copy(a):
    return np.array(a)


@pytest.mark.parametrize(
    "data",
    [np.arange(12.0).reshape(3, 4).T, np.zeros((3, 0)), np.array(7.5), np.arange(6, dtype=">i4")],
    ids=["transposed", "empty", "0-d", "big-endian"],
)
def test_rro_segment_holds_any_layout(runtime, data):
    view = wait_on(shared_copy(data))
    np.testing.assert_array_equal(view, data)
    assert view.shape == data.shape and view.dtype == data.dtype


def test_rro_on_non_array_is_rejected_at_call(runtime):
    with pytest.raises(TypeError, match=r"recurrent read-only.*NumPy array, got list"):
        inspect_shared([1, 2, 3])
    with pytest.raises(TypeError, match="NumPy array, got int"):
        wait_on(inspect_shared(add(1, 2)))  # known only once the future has a value


def test_without_rro_arrays_arrive_as_private_copies(runtime):
    data = np.arange(10.0)
    total, writeable, _ = wait_on(inspect_plain(data))
    assert (total, writeable) == (45.0, True)
    assert runtime.segment_names == []


def test_automatic_promotion_on_second_read(runtime):
    data = np.ones(tasks.runtime.AUTO_SHARE_MIN_BYTES // 8)
    assert wait_on(inspect_plain(data))[1] is True  # first read: a private, writable copy
    assert data.flags.writeable
    assert wait_on(inspect_plain(data))[1] is False  # second read: a shared view
    assert len(runtime.segment_names) == 1
    assert not data.flags.writeable  # writes would go unseen by the segment, so they fail
    with pytest.raises(ValueError, match="read-only"):
        data[0] = 5
    delete(data)
    assert data.flags.writeable
    assert runtime.segment_names == []


@task()
def scribble_and_sum(a):
    total = float(a.sum())
    a[:] = -1.0  # a task may write into its own copy of an IN argument
    return total


def test_first_read_copy_is_private_and_promotion_sees_later_caller_writes(runtime):
    data = np.ones(tasks.runtime.AUTO_SHARE_MIN_BYTES // 8)
    assert wait_on(scribble_and_sum(data)) == data.size
    assert (data == 1.0).all()  # the task's writes stayed in its copy
    data[:10] = 3.0  # the caller still owns a writable array after one read
    assert wait_on(inspect_plain(data))[0] == data.size + 20  # promotion took the new values
    assert wait_on(inspect_plain(data))[0] == data.size + 20
    assert len(runtime.segment_names) == 1 and not data.flags.writeable
    delete(data)
    assert runtime.segment_names == [] and data.flags.writeable


def test_automatic_promotion_can_be_off():
    runtime = tasks.start(workers=1, auto_share=False)
    try:
        data = np.ones(tasks.runtime.AUTO_SHARE_MIN_BYTES // 8)
        for _ in range(3):
            assert wait_on(inspect_plain(data))[1] is True
        assert runtime.segment_names == []
    finally:
        tasks.shutdown()


def test_no_room_in_shared_memory_falls_back_with_warning(runtime, monkeypatch):
    monkeypatch.setattr(shm_store, "fits", lambda nbytes: False)
    data = np.arange(100.0)
    with pytest.warns(tasks.SharedMemoryFallbackWarning, match="sending it by value"):
        future = inspect_shared(data)
    assert wait_on(future)[:2] == (data.sum(), True)
    assert runtime.segment_names == []


def test_new_version_gets_its_own_segment_and_old_one_is_released(runtime):
    c = np.zeros((8, 8))
    assert wait_on(inspect_shared(c))[0] == 0.0
    (version_zero,) = runtime.segment_names
    stem, number, _ = version_zero.rsplit("-", 2)
    assert number == "v0"
    multiply_add(np.ones((8, 8)), np.eye(8), c)  # version 1 of c
    assert wait_on(inspect_shared(c))[0] == 64.0
    (version_one,) = runtime.segment_names  # version 0 is superseded and unread: released
    assert version_one.rsplit("-", 2)[:2] == [stem, "v1"]
    assert shoal_segments() == [version_one]
    delete(c)
    assert runtime.segment_names == []


def test_scheduling_prefers_the_worker_holding_the_data(runtime):
    big = produce(1 << 20)  # 8 MiB stays cached on the worker that produced it
    producer_pid = wait_on(where_am_i(big))
    for _ in range(6):
        assert wait_on(where_am_i(big)) == producer_pid


def test_delete_releases_future_values(runtime):
    big = produce(1000)
    assert wait_on(big).sum() == 2000.0
    delete(big)
    with pytest.raises(ValueError, match="deleted"):
        wait_on(big)


def test_wait_on_untracked_values_returns_them(runtime):
    marker = object()
    assert wait_on(marker) is marker


@task()
def identity(x):
    return x


def _learn_short(function, count=40):
    """Run a function enough times that the runtime counts it as a short task."""
    wait_on([function(i) for i in range(count)])


def test_burst_of_short_tasks_keeps_each_result_and_error(runtime):
    _learn_short(identity)
    futures = [identity(i) for i in range(400)]
    unpicklable_argument = identity(lambda: 0)
    failing = fail_with("in the burst")
    futures += [identity(i) for i in range(400, 800)]
    assert wait_on(futures) == list(range(800))
    with pytest.raises(TypeError, match="could not be sent to the worker"):
        wait_on(unpicklable_argument)
    with pytest.raises(KeyError, match="in the burst"):
        wait_on(failing)


@task()
def numbers(n, lazily=False):
    return (i for i in range(n)) if lazily else list(range(n))


def test_unpicklable_result_in_a_burst_fails_only_its_task(runtime):
    _learn_short(numbers)
    futures = [numbers(i) for i in range(300)]
    bad = numbers(3, lazily=True)
    futures += [numbers(i) for i in range(300, 600)]
    assert wait_on(futures) == [list(range(i)) for i in range(600)]
    with pytest.raises(TypeError, match="generator"):
        wait_on(bad)

"""Hung tasks can be waited on with a timeout, cancelled, or given a per-task timeout; a
worker stopped for them is replaced and the tasks queued behind run elsewhere."""

from __future__ import annotations

import concurrent.futures
import os
import re
import time
from pathlib import Path

import psutil
import pytest

import shoal.tasks as tasks
from shoal.tasks import task, wait_on

pytestmark = [pytest.mark.full, pytest.mark.timeout(90)]


@task()
def hang(marker):
    Path(marker).write_text(str(os.getpid()))
    time.sleep(600)


@task(timeout=0.5)
def hang_with_timeout(marker):
    Path(marker).write_text(str(os.getpid()))
    time.sleep(600)


@task(timeout=60)
def quick_with_timeout(x):
    return x * 2


@task()
def wait_for_file(path):
    while not os.path.exists(path):
        time.sleep(0.01)
    return os.getpid()


@task()
def touch(path):
    Path(path).write_text("ran")
    return os.getpid()


@task()
def add(x, y):
    return x + y


def _started(marker: Path, timeout: float = 30.0) -> int:
    deadline = time.monotonic() + timeout
    while not marker.exists() or not marker.read_text():
        assert time.monotonic() < deadline, f"{marker} never appeared"
        time.sleep(0.01)
    return int(marker.read_text())


def _gone(pid: int) -> bool:
    return not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE


def test_wait_with_timeout_then_cancel_a_running_task(runtime, tmp_path):
    marker = tmp_path / "pid"
    future = hang(str(marker))
    victim = _started(marker)
    with pytest.raises(TimeoutError, match=r"not ready within 0.2 s"):
        wait_on(future, timeout=0.2)
    with pytest.raises(TimeoutError):
        future.result(timeout=0)
    with pytest.raises(TimeoutError):
        wait_on([add(1, 1), future], timeout=0.1)
    assert not future.done()
    dependent = add(future, 1)
    assert future.cancel() is True
    with pytest.raises(tasks.TaskCancelledError, match=r"hang#\d+ was cancelled") as raised:
        wait_on(future)
    assert isinstance(raised.value, concurrent.futures.CancelledError)
    assert any(re.search(r"stopped on worker \d+ \(pid \d+\), which was replaced", n) for n in raised.value.__notes__)
    with pytest.raises(tasks.TaskDependencyError) as dependency:
        wait_on(dependent)
    assert isinstance(dependency.value.__cause__, tasks.TaskCancelledError)
    assert future.cancelled() and future.cancel() is False
    assert _gone(victim) and victim not in runtime.worker_pids and len(runtime.worker_pids) == 2
    assert wait_on(add(2, 3)) == 5


def test_cancel_of_a_finished_task_is_refused(runtime):
    future = add(1, 2)
    assert wait_on(future) == 3
    assert future.cancel() is False and not future.cancelled()
    assert wait_on(future) == 3


def test_cancel_a_task_queued_behind_another_skips_it_without_stopping_the_worker(tmp_path):
    runtime = tasks.start(workers=1)
    try:
        release = tmp_path / "release"
        first = wait_for_file(str(release))
        skipped = tmp_path / "skipped"
        queued = touch(str(skipped))  # sent to the same worker, behind the first
        (pid,) = runtime.worker_pids
        assert queued.cancel() is True
        with pytest.raises(tasks.TaskCancelledError):
            wait_on(queued)
        release.write_text("go")
        assert wait_on(first) == pid
        assert wait_on(touch(str(tmp_path / "after"))) == pid  # same worker, after the queued one
        assert not skipped.exists()  # the cancelled task never ran
    finally:
        tasks.shutdown()


def test_a_task_past_its_timeout_fails_and_its_worker_is_replaced(tmp_path):
    runtime = tasks.start(workers=1)
    try:
        (victim,) = runtime.worker_pids
        overdue = hang_with_timeout(str(tmp_path / "pid"))
        behind = add(20, 22)  # queued on the same worker: runs on the replacement
        with pytest.raises(
            tasks.TaskTimeoutError,
            match=r"hang_with_timeout#\d+ ran longer than its timeout of 0.5 s \(stopped after \d+\.\d s\) "
            r"on worker 0 \(pid \d+\), which was replaced",
        ):
            wait_on(overdue)
        assert wait_on(behind) == 42
        assert _gone(victim) and runtime.worker_pids != [victim]
        assert wait_on([quick_with_timeout(i) for i in range(5)]) == [0, 2, 4, 6, 8]
    finally:
        tasks.shutdown()


def test_bad_timeouts_are_refused(runtime):
    with pytest.raises(ValueError, match="non-negative number of seconds"):
        wait_on(add(1, 1), timeout=-1)
    for bad in (0, -1, "5", True):
        with pytest.raises(TypeError, match="timeout must be a positive number of seconds"):
            task(timeout=bad)(lambda_free)


def lambda_free(x):
    return x

"""Fixtures shared by the task-runtime tests: a running runtime, and the leak check after each test."""

from __future__ import annotations

import contextlib
import fcntl
import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
from collections.abc import Iterator

import psutil
import pytest

import shoal.tasks as tasks
from shoal.tasks.shm import SHM_DIR, segment_owner, task_segments


@contextlib.contextmanager
def planting_dead_segments() -> Iterator[None]:
    """Held while a test plants a segment of a dead job in /dev/shm: no worker of the run checks
    for leaks meanwhile, as it would take the planted file for one (the lock is on this
    directory, shared by the workers, so nothing is left behind)."""
    with _segments_lock(fcntl.LOCK_EX):
        yield


@contextlib.contextmanager
def _segments_lock(mode: int) -> Iterator[None]:
    descriptor = os.open(os.path.dirname(os.path.abspath(__file__)), os.O_RDONLY)
    try:
        fcntl.flock(descriptor, mode)
        yield
    finally:
        os.close(descriptor)


def shoal_segments() -> list[str]:
    """This user's task segments of this process, or of any process that is gone (a leak).

    Live programs running beside the tests (benchmarks) may own segments; those are theirs. So
    are another user's files. Tests that plant a dead job's segment hold
    :func:`planting_dead_segments`, which this waits for.
    """
    with _segments_lock(fcntl.LOCK_SH):
        return [
            name
            for name in task_segments()
            if _this_users(name) and (segment_owner(name) == os.getpid() or not psutil.pid_exists(segment_owner(name)))
        ]


def _this_users(name: str) -> bool:
    try:
        return os.lstat(os.path.join(SHM_DIR, name)).st_uid == os.geteuid()
    except FileNotFoundError:
        return False


@pytest.fixture(autouse=True)
def no_shoal_segments():
    yield
    assert shoal_segments() == []


def _helpers_running() -> tuple[bool, bool]:
    """Whether multiprocessing's forkserver and resource tracker processes are running."""
    server = multiprocessing.forkserver._forkserver
    tracker = multiprocessing.resource_tracker._resource_tracker
    return server._forkserver_pid is not None, tracker._pid is not None


@pytest.fixture(autouse=True, scope="module")
def no_task_helpers_left():
    """Stop the forkserver and resource tracker a module's task runtimes started, once the
    module is done: later tests count this process's children (the engine's compile worker)."""
    before = _helpers_running()
    yield
    server, tracker = _helpers_running()
    if server and not before[0]:
        multiprocessing.forkserver._forkserver._stop()
    if tracker and not before[1]:
        multiprocessing.resource_tracker._resource_tracker._stop()


@pytest.fixture
def runtime():
    rt = tasks.start(workers=2)
    yield rt
    tasks.shutdown()

"""Fixtures shared by the task-runtime tests: a running runtime, and the leak check after each test."""

from __future__ import annotations

import os

import psutil
import pytest

import shoal.tasks as tasks
from shoal.tasks.shm import segment_owner, task_segments


def shoal_segments() -> list[str]:
    """Task segments of this process, or of any process that is gone (a leak).

    Live programs running beside the tests (benchmarks) may own segments; those are theirs.
    """
    return [
        name
        for name in task_segments()
        if segment_owner(name) == os.getpid() or not psutil.pid_exists(segment_owner(name))
    ]


@pytest.fixture(autouse=True)
def no_shoal_segments():
    yield
    assert shoal_segments() == []


@pytest.fixture
def runtime():
    rt = tasks.start(workers=2)
    yield rt
    tasks.shutdown()

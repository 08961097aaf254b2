"""Tasks end cleanly: any exception a task raises, or its result raises while pickled, is
that task's error; the task runs once and its worker survives."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from shoal.tasks import task, wait_on

pytestmark = [pytest.mark.full, pytest.mark.timeout(90)]


class Fatal(BaseException):
    """An exception outside the Exception hierarchy, as some libraries raise."""


def _count_run(marker: str) -> None:
    with open(marker, "a") as file:
        file.write(f"{os.getpid()}\n")


@task()
def raise_base(marker, kind):
    _count_run(marker)
    if kind == "exit":
        raise SystemExit(3)
    if kind == "interrupt":
        raise KeyboardInterrupt("stop here")
    raise Fatal("fatal in the task")


class Unpicklable:
    """A result whose pickling raises ``error``."""

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def __reduce__(self):
        raise self.error


@task()
def return_unpicklable(marker, kind):
    _count_run(marker)
    errors = {
        "value": ValueError("refuses to be pickled"),
        "exit": SystemExit("exit while pickled"),
        "runtime": RuntimeError("runtime error while pickled"),
    }
    return Unpicklable(errors[kind])


@task()
def where(x):
    return os.getpid()


def _runs(marker: Path) -> list[str]:
    return marker.read_text().split()


@pytest.mark.parametrize(
    ("kind", "error", "message"),
    [("exit", SystemExit, "3"), ("interrupt", KeyboardInterrupt, "stop here"), ("base", Fatal, "fatal in the task")],
)
def test_base_exception_is_the_task_error_and_the_worker_survives(runtime, tmp_path, kind, error, message):
    pids = sorted(runtime.worker_pids)
    marker = tmp_path / "runs"
    with pytest.raises(error, match=message) as raised:
        wait_on(raise_base(str(marker), kind))
    assert any("raise_base#" in note for note in raised.value.__notes__)
    assert len(_runs(marker)) == 1  # ran once: no retry on another worker
    assert sorted(runtime.worker_pids) == pids
    assert int(_runs(marker)[0]) in pids
    assert wait_on(where(0)) in pids  # the pool still works


@pytest.mark.parametrize(
    ("kind", "error", "message"),
    [
        ("value", ValueError, "refuses to be pickled"),
        ("exit", SystemExit, "exit while pickled"),
        ("runtime", RuntimeError, "runtime error while pickled"),
    ],
)
def test_result_whose_pickling_raises_is_the_task_error(runtime, tmp_path, kind, error, message):
    pids = sorted(runtime.worker_pids)
    marker = tmp_path / "runs"
    with pytest.raises(error, match=message) as raised:
        wait_on(return_unpicklable(str(marker), kind))
    assert any("pickling the result" in note for note in raised.value.__notes__)
    assert len(_runs(marker)) == 1
    assert sorted(runtime.worker_pids) == pids
    assert wait_on([where(i) for i in range(4)]) != []

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


@pytest.mark.parametrize("error", [ValueError("no"), SystemExit("no"), KeyboardInterrupt("no")], ids=lambda e: type(e).__name__)
def test_argument_whose_pickling_raises_fails_only_its_task(runtime, error):
    pids = sorted(runtime.worker_pids)
    with pytest.raises(TypeError, match=r"where#\d+: an argument could not be sent to the worker") as raised:
        wait_on(where(Unpicklable(error)))
    assert raised.value.__cause__ is error
    assert sorted(runtime.worker_pids) == pids
    assert wait_on(where(1)) in pids  # the sender thread still runs


def _explode_elsewhere(pid):
    if os.getpid() != pid:
        raise ValueError(f"this object cannot be unpickled outside process {pid}")
    return LoadsOnlyAtHome(pid)


class LoadsOnlyAtHome:
    """Pickles anywhere; unpickling raises in any process but the one that made it."""

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def __reduce__(self):
        return (_explode_elsewhere, (self.pid,))


@task()
def make_homebound():
    return LoadsOnlyAtHome(os.getpid())


@task()
def receive_homebound(thing, marker):
    _count_run(marker)
    return "received"


def test_result_that_cannot_be_unpickled_in_the_main_process_fails_its_task(runtime):
    pids = sorted(runtime.worker_pids)
    with pytest.raises(RuntimeError, match=r"make_homebound#\d+ .* could not be unpickled in the main process") as raised:
        wait_on(make_homebound())
    assert isinstance(raised.value.__cause__, ValueError)
    assert sorted(runtime.worker_pids) == pids
    assert wait_on(where(1)) in pids  # the receiver still runs


def test_argument_that_cannot_be_unpickled_in_the_worker_fails_its_task(runtime, tmp_path):
    pids = sorted(runtime.worker_pids)
    marker = tmp_path / "runs"
    with pytest.raises(ValueError, match="cannot be unpickled outside process") as raised:
        wait_on(receive_homebound(LoadsOnlyAtHome(os.getpid()), str(marker)))
    assert any("unpickling the task's arguments" in note for note in raised.value.__notes__)
    assert not marker.exists()  # never ran, and never retried
    assert sorted(runtime.worker_pids) == pids
    assert wait_on(where(1)) in pids

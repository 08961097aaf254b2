"""Crashes: workers and the main process killed with SIGKILL leave no segments and no hang."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import psutil
import pytest
from task_fixtures import planting_dead_segments, shoal_segments

import shoal.tasks as tasks
from shoal.tasks import IN, task, wait_on
from shoal.tasks.shm import task_segments

pytestmark = [pytest.mark.full, pytest.mark.timeout(90)]




@task(a={"direction": IN, "rro": True})
def sleep_once(a, marker, seconds):
    if not os.path.exists(marker):
        with open(marker, "w") as file:
            file.write(str(os.getpid()))
        time.sleep(seconds)
    return float(a.sum()), os.getpid()


@task()
def kill_own_worker():
    os.kill(os.getpid(), signal.SIGKILL)


@task()
def add(x, y):
    return x + y


def _wait_for_file(path, timeout=30.0):
    deadline = time.monotonic() + timeout
    path = Path(path)
    while not path.exists() or not path.read_text():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.01)
    return path.read_text()


def test_killed_worker_task_is_retried_on_another_worker(runtime, tmp_path):
    data = np.arange(1000.0)
    marker = tmp_path / "pid"
    future = sleep_once(data, str(marker), 30)
    victim = int(_wait_for_file(marker))
    assert len(shoal_segments()) == 1
    os.kill(victim, signal.SIGKILL)
    total, pid = wait_on(future)
    assert total == data.sum() and pid != victim
    assert victim not in runtime.worker_pids and len(runtime.worker_pids) == 2
    assert wait_on(add(2, 3)) == 5


def test_task_that_always_kills_its_worker_fails_clearly(runtime):
    with pytest.raises(tasks.WorkerLostError, match=r"kill_own_worker#\d+ was running on worker \d+ .*died"):
        wait_on(kill_own_worker())
    assert wait_on(add(1, 1)) == 2


def test_shutdown_fails_unfinished_tasks_without_hanging(tmp_path):
    runtime = tasks.start(workers=1)
    data = np.ones(10)
    running = sleep_once(data, str(tmp_path / "pid"), 30)
    queued = [add(i, 1) for i in range(5)]
    _wait_for_file(tmp_path / "pid")
    pids = runtime.worker_pids
    tasks.shutdown(timeout=0.5)
    with pytest.raises(tasks.RuntimeShutdownError, match="shut down before the task ran"):
        wait_on(running)
    with pytest.raises(tasks.RuntimeShutdownError):
        wait_on(queued[-1])
    assert not any(psutil.pid_exists(pid) and psutil.Process(pid).status() != "zombie" for pid in pids)


def test_stale_segments_of_dead_jobs_are_swept_at_start():
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    stale = f"/dev/shm/shoal-{dead.stdout.strip()}.abcdef-1-v0"
    mine = f"/dev/shm/shoal-{os.getpid()}.abcdef-1-v0"  # a live job's segment stays
    with planting_dead_segments():
        with open(stale, "wb") as file:
            file.write(b"\0" * 128)
        with open(mine, "wb") as file:
            file.write(b"\0" * 128)
        try:
            tasks.start(workers=1)
            assert not os.path.exists(stale)
            assert os.path.exists(mine)
        finally:
            tasks.shutdown()
            os.unlink(mine)
            if os.path.exists(stale):
                os.unlink(stale)


MAIN_SCRIPT = textwrap.dedent(
    """
    import os, sys, time
    import numpy as np
    import shoal.tasks as tasks
    from shoal.tasks import IN, task, wait_on

    @task(a={"direction": IN, "rro": True})
    def total(a):
        return float(a.sum())

    if __name__ == "__main__":
        runtime = tasks.start(workers=2)
        data = np.ones(1 << 16)
        assert wait_on(total(data)) == data.size
        print(" ".join(map(str, runtime.worker_pids)), flush=True)
        time.sleep(60)
    """
)


def test_killed_main_process_leaves_no_segments_or_workers(tmp_path):
    script = tmp_path / "main_app.py"
    script.write_text(MAIN_SCRIPT)
    process = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    try:
        worker_pids = [int(pid) for pid in process.stdout.readline().split()]
        assert len(worker_pids) == 2
        assert any(name.startswith(f"shoal-{process.pid}.") for name in task_segments())
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait()
        process.stdout.close()
    deadline = time.monotonic() + 30
    while shoal_segments() or any(psutil.pid_exists(pid) for pid in worker_pids):
        assert time.monotonic() < deadline, (shoal_segments(), worker_pids)
        time.sleep(0.05)


@task()
def kill_once(marker, value):
    if not os.path.exists(marker):
        with open(marker, "w") as file:
            file.write(str(os.getpid()))
        os.kill(os.getpid(), signal.SIGKILL)
    return value


def test_worker_killed_amid_a_burst_of_short_tasks_loses_none(runtime, tmp_path):
    wait_on([add(i, 0) for i in range(40)])  # short tasks now travel in batches
    marker = str(tmp_path / "pid")
    futures = [add(i, 0) for i in range(300)]
    futures.append(kill_once(marker, -1))
    futures += [add(i, 0) for i in range(300, 600)]
    assert wait_on(futures) == [*range(300), -1, *range(300, 600)]
    assert int(Path(marker).read_text()) not in runtime.worker_pids

"""SIGTERM, SIGINT and SIGHUP of the main program, while tasks hang, end every worker, the
forkserver and the resource tracker, and remove every segment within seconds; so does
SIGKILL, which no handler sees (the workers notice the main is gone)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import psutil
import pytest
from task_fixtures import shoal_segments

pytestmark = [pytest.mark.full, pytest.mark.timeout(120)]

WORKERS = 4

APP = textwrap.dedent(
    """
    import os, signal, sys, time
    # Ctrl-C as in a terminal, whatever dispositions or mask the test runner left to inherit
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM, signal.SIGHUP})
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a runner started under ``nohup`` leaves SIGHUP ignored
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    import numpy as np
    import psutil
    import shoal.tasks as tasks
    from shoal.tasks import IN, task, wait_on

    @task(a={"direction": IN, "rro": True})
    def hang(a, marker):
        with open(marker, "w") as file:
            file.write(str(os.getpid()))
        time.sleep(600)

    if __name__ == "__main__":
        tasks.start(workers=int(sys.argv[2]))
        data = np.ones(1 << 16)
        markers = [f"{sys.argv[1]}-{i}" for i in range(int(sys.argv[2]))]
        futures = [hang(data, marker) for marker in markers]
        while not all(os.path.exists(marker) for marker in markers):
            time.sleep(0.01)
        print(" ".join(str(p.pid) for p in psutil.Process().children(recursive=True)), flush=True)
        wait_on(futures)
    """
)


def _running(pids: list[int]) -> list[int]:
    alive = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            pass
    return alive


@pytest.mark.parametrize(
    "signum",
    [
        signal.SIGTERM,
        # The app installs Ctrl-C's handler and unblocks it itself: a runner that starts the
        # suite with SIGINT ignored or blocked (a background job) is passed on to it that way.
        signal.SIGINT,
        signal.SIGHUP,
        signal.SIGKILL,
    ],
    ids=lambda s: s.name,
)
def test_signal_to_the_main_program_ends_workers_forkserver_and_segments(tmp_path, signum):
    script = tmp_path / "app.py"
    script.write_text(APP)
    process = subprocess.Popen(
        [sys.executable, str(script), str(tmp_path / "started"), str(WORKERS)],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    children: list[int] = []
    try:
        children = [int(pid) for pid in process.stdout.readline().split()]
        # the workers, the forkserver and the resource tracker
        assert len(children) == WORKERS + 2, children
        assert any(name.startswith(f"shoal-{process.pid}.") for name in os.listdir("/dev/shm"))
        process.send_signal(signum)
        assert process.wait(30) == -signum  # the program still dies of its signal
        deadline = time.monotonic() + 30
        while _running(children) or [n for n in os.listdir("/dev/shm") if n.startswith(f"shoal-{process.pid}.")]:
            assert time.monotonic() < deadline, (_running(children), shoal_segments())
            time.sleep(0.05)
    finally:
        process.kill()
        process.wait()
        process.stdout.close()
        for pid in _running(children):
            os.kill(pid, signal.SIGKILL)
        for name in os.listdir("/dev/shm"):
            if name.startswith(f"shoal-{process.pid}."):
                os.unlink(os.path.join("/dev/shm", name))

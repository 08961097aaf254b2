"""The guardian of a rank (``shoal.cluster.guard``) names the signal that killed it, passes its
exit code through, and leaves no rank behind when it dies itself; no MPI needed."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import psutil
import pytest

from shoal.cluster.guard import describe, rank_of

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the guardian is Linux only")

GUARDED = "from shoal.cluster.guard import guard\nguard()\nimport os, signal, sys, time\n"


def guarded(body: str, **env: str) -> subprocess.Popen:
    environ = {key: value for key, value in os.environ.items() if not key.startswith(("PMI_", "OMPI_", "PMIX_"))}
    environ.update(env)
    return subprocess.Popen([sys.executable, "-c", GUARDED + body], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=environ, start_new_session=True)


def test_the_line_names_the_rank_host_and_signal() -> None:
    assert describe(signal.SIGSEGV, "3", "node7") == "shoal: cluster rank 3 (node7) was killed by signal 11 (SIGSEGV)\n"
    assert describe(0, "3", "node7") is None  # exited with 0
    assert describe(5 << 8, "3", "node7") is None  # exited with 5
    assert rank_of({"PMI_RANK": "4"}) == "4" and rank_of({"PMIX_RANK": "1"}) == "1" and rank_of({}) == "?"


@pytest.mark.parametrize("number", [signal.SIGKILL, signal.SIGSEGV, signal.SIGABRT])
def test_a_rank_killed_by_a_signal_is_named(number: signal.Signals) -> None:
    process = guarded(f"os.kill(os.getpid(), {int(number)})\nprint('survived')\n", PMI_RANK="5")
    stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 128 + number
    assert stdout == ""
    assert f"shoal: cluster rank 5 ({os.uname().nodename}) was killed by signal {int(number)} ({number.name})" in stderr


def test_the_exit_code_passes_through() -> None:
    process = guarded("print('rank', os.getpid() != os.getppid(), flush=True)\nsys.exit(9)\n", PMI_RANK="0")
    stdout, stderr = process.communicate(timeout=60)
    assert (process.returncode, stdout, stderr) == (9, "rank True\n", "")


def test_the_rank_dies_with_its_guardian() -> None:
    process = guarded("print(os.getpid(), flush=True)\ntime.sleep(60)\n", PMI_RANK="1")
    assert process.stdout is not None
    rank = int(process.stdout.readline())
    assert psutil.Process(rank).ppid() == process.pid
    os.kill(process.pid, signal.SIGKILL)  # the guardian, as mpiexec ends a job
    process.communicate(timeout=60)
    deadline = time.monotonic() + 30
    while psutil.pid_exists(rank) and psutil.Process(rank).status() != psutil.STATUS_ZOMBIE and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not psutil.pid_exists(rank) or psutil.Process(rank).status() == psutil.STATUS_ZOMBIE

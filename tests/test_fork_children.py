"""Programs that fork (a fork-started ``multiprocessing`` pool, a ``ProcessPoolExecutor``,
``os.fork``) give NumPy's output and exit status under ``python -m shoal``, with the arrays on a
server, and across MPI ranks: a child sees its parent's arrays as they were at the fork, its
writes stay its own, it never uses the parent's connection or communicator, and the parent goes
on afterwards. Nothing hangs and no process outlives the run (``shoal/forks.py``)."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pytest
from fork_programs import PROGRAMS, python, run, same, shoal, write_program
from numpy_fixtures import AGAINST_NUMPY
from proxy_harness import TOKEN, live_server

pytestmark = pytest.mark.skipif(AGAINST_NUMPY, reason="runs programs under python -m shoal")

NAMES = sorted(PROGRAMS)


# Every batch in blocks on two engine threads: the parent's threads have run before the fork.
BLOCKS = {"SHOAL_DIRECT_WORK": "0", "SHOAL_NUM_THREADS": "2", "SHOAL_BLOCK_SIZE": "65536"}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("settings", ["default", "lazy", "blocks"])
def test_a_forking_program_runs_as_under_python(tmp_path: Path, name: str, settings: str) -> None:
    # In blocks, a child queued its work for the parent's engine threads, which it does not
    # have, and waited for them forever.
    program = write_program(tmp_path, name)
    extra = {"default": {}, "lazy": {"SHOAL_EAGER_THRESHOLD": "0", "SHOAL_VERIFY": "1"}, "blocks": BLOCKS}[settings]
    same(python(program, tmp_path), shoal(program, tmp_path, **extra))


@pytest.mark.full
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", NAMES)
def test_a_forking_program_runs_as_under_python_with_a_server(tmp_path: Path, name: str) -> None:
    # The children wrote on the client's socket: the server ended the parent's session.
    program = write_program(tmp_path, name)
    reference = python(program, tmp_path)
    with live_server() as server:
        host, port = server.address
        for threshold in ("524288", "0"):
            result = shoal(program, tmp_path, SHOAL_REMOTE=f"{host}:{port}", SHOAL_TOKEN=TOKEN, SHOAL_EAGER_THRESHOLD=threshold)
            same(reference, result)
            assert "session" not in result.stderr
        deadline = time.monotonic() + 10
        while server.session_count() and time.monotonic() < deadline:  # the program's BYE ends it
            time.sleep(0.05)
        assert server.session_count() == 0


@pytest.mark.full
@pytest.mark.timeout(300)
@pytest.mark.parametrize("name", NAMES)
def test_a_forking_program_runs_as_under_python_across_ranks(tmp_path: Path, name: str) -> None:
    # A child called MPI on its parent's communicators: truncated broadcasts aborted the job, or
    # it hung (MPI_Finalize in a child that exits normally waits for ranks that never answer).
    from cluster.harness import environment, mpiexec

    program = write_program(tmp_path, name)
    reference = python(program, tmp_path)
    command = [mpiexec(), "-n", "2", sys.executable, "-m", "shoal", str(program)]
    for env in (environment(), {k: v for k, v in os.environ.items() if not k.startswith(("PMI_", "HYDRA_"))}):
        same(reference, run(command, env, tmp_path))

"""Sends go on while a rank computes: MPI moves some messages only inside the sender's MPI calls
(MPICH's two-cell shared-memory messages of 8,113-8,191 bytes, a rendezvous on a network), and a
rank in a long node-engine batch makes none (``SendProgress`` in ``shoal/cluster/flush.py``,
``MPICH_DEFAULTS`` in ``shoal/cluster/session.py``)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from cluster.harness import PROGRAMS, environment, mpiexec, run, run_command

pytestmark = [pytest.mark.full, pytest.mark.timeout(150)]


def test_a_send_that_needs_the_senders_calls_arrives_while_it_computes(tmp_path: Path) -> None:
    env = environment(MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE="8192")
    result = run_command([mpiexec(), "-n", "2", sys.executable, str(PROGRAMS / "send_progress.py"), str(tmp_path / "flag")], timeout=120, env=env)
    assert result.returncode == 0, result.stderr
    assert "arrived while computing" in result.stdout


@pytest.mark.parametrize("given", [None, "8192"])
def test_ranks_get_cells_that_carry_a_row_of_1022_doubles_unless_the_user_chose(tmp_path: Path, given: str | None) -> None:
    program = tmp_path / "cells.py"
    program.write_text("import os\nprint('cells', os.environ.get('MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE'))\n")
    env = environment()
    env.pop("MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE", None)
    if given is not None:
        env["MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE"] = given
    result = run(2, program, env=env)
    assert result.returncode == 0, result.stderr
    assert f"cells {given or '16384'}" in result.stdout

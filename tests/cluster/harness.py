"""Running a program under ``mpiexec -n N python -m shoal`` from a test, bounded and leak-free.

Each run gets its own session (process group), so a run that outlives its timeout is killed whole
(mpiexec, its proxy and every rank) and nothing is left behind; the test then fails.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

PROGRAMS = Path(__file__).resolve().parent / "programs"
EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
RUN_TIMEOUT = 90


def mpiexec() -> str:
    """The ``mpiexec`` next to this interpreter (the ``mpich`` wheel's), else one on PATH."""
    beside = Path(sys.executable).parent / "mpiexec"
    found = str(beside) if beside.exists() else shutil.which("mpiexec")
    if found is None:
        pytest.skip("no mpiexec: install shoal[mpi]")
    return found


@dataclass
class Run:
    returncode: int
    stdout: str
    stderr: str


def environment(**extra: str) -> dict[str, str]:
    """The environment of a cluster run: every array lazy and recorded (no small view of a settled
    base computed at the call), every base over 1 KiB distributed."""
    env = {key: value for key, value in os.environ.items() if not key.startswith(("PMI_", "OMPI_", "PMIX_", "HYDRA_", "MPI_LOCALNRANKS"))}
    env.update(SHOAL_EAGER_THRESHOLD="0", SHOAL_SETTLED_THRESHOLD="0", SHOAL_VERIFY="1", SHOAL_CLUSTER_MIN_BYTES="1024", SHOAL_COMPILE="off")
    # The suite's other process shares the cores: ranks that spin while waiting slow it and each
    # other (8-15% more time per run measured). The tests that choose the wait mode still do.
    env.setdefault("SHOAL_CLUSTER_WAIT", "yield")
    env.update(extra)
    return env


def run(ranks: int, program: Path | str, *arguments: str, timeout: float = RUN_TIMEOUT, env: dict[str, str] | None = None) -> Run:
    """``mpiexec -n ranks python -m shoal program arguments...``; kills the whole job past ``timeout``."""
    command = [mpiexec(), "-n", str(ranks), sys.executable, "-W", "error", "-W", "default::RuntimeWarning", "-W", "default:the cluster runs", "-m", "shoal", str(program), *arguments]
    return run_in_session(command, timeout, env if env is not None else environment())


def run_numpy(program: Path | str, *arguments: str, timeout: float = RUN_TIMEOUT) -> Run:
    """The program under plain ``python``: the reference."""
    return run_in_session([sys.executable, "-W", "error", str(program), *arguments], timeout, None)


def run_command(command: list[str], timeout: float = RUN_TIMEOUT, env: dict[str, str] | None = None) -> Run:
    """``command`` (an ``mpiexec`` line) in a session of its own, killed whole past ``timeout``."""
    return run_in_session(command, timeout, env if env is not None else environment())


def run_in_session(command: list[str], timeout: float, env: dict[str, str] | None, cwd: Path | None = None, fail_if_left: bool = False) -> Run:
    """``command`` (in ``cwd``) in a session of its own, killed whole past ``timeout`` (the test
    fails) and once it ended; with ``fail_if_left`` the test also fails if a process of that
    session outlives the run (a pool worker)."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=cwd, start_new_session=True)
    try:
        stdout, stderr = process.communicate(timeout=timeout)
        left = left_behind(process.pid) if fail_if_left else []
        if left:
            pytest.fail(f"{' '.join(command)} left processes behind: {left}\nstderr:\n{stderr}")
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        pytest.fail(f"{' '.join(command)} ran past {timeout} s\nstdout:\n{stdout}\nstderr:\n{stderr}")
    finally:
        try:
            os.killpg(process.pid, signal.SIGKILL)  # whatever of the job is left
        except ProcessLookupError:
            pass
    return Run(process.returncode, stdout, stderr)


def left_behind(group: int, seconds: float = 10.0) -> list[int]:
    """The processes of process group ``group`` still alive once they had ``seconds`` to end."""
    deadline = time.monotonic() + seconds
    while True:
        alive = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[2]) == group and fields[0] != "Z":  # pgrp; a zombie has ended
                alive.append(int(entry.name))
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.05)


def lines(text: str, prefix: str) -> list[str]:
    """The values of the lines of ``text`` that start with ``prefix``."""
    return [line[len(prefix) :].strip() for line in text.splitlines() if line.startswith(prefix)]


def load_arrays(path: Path) -> dict[str, np.ndarray]:
    """The arrays of the ``.npz`` file a program wrote, by name."""
    with np.load(path) as data:
        return {name: data[name] for name in data.files}


def assert_same_arrays(got: dict[str, np.ndarray], expected: dict[str, np.ndarray], reordered: frozenset[str] = frozenset()) -> None:
    """``got`` holds ``expected``'s arrays: the same names, dtypes and shapes, the same values
    bit for bit except those named in ``reordered`` (sums the ranks may add in another order),
    which agree to 1e-12 relative."""
    assert sorted(got) == sorted(expected)
    for name, want in expected.items():
        have = got[name]
        assert have.dtype == want.dtype and have.shape == want.shape, name
        if name in reordered:
            np.testing.assert_allclose(have, want, rtol=1e-12, atol=0, err_msg=name)
        else:
            np.testing.assert_array_equal(have, want, err_msg=name)


def numpy_arrays(program: Path, directory: Path) -> dict[str, np.ndarray]:
    """The arrays ``program`` writes when run under plain NumPy (into ``directory``)."""
    path = directory / "expected.npz"
    result = run_numpy(program, str(path))
    assert result.returncode == 0, result.stderr
    return load_arrays(path)

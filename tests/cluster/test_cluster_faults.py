"""A rank that dies or fails ends the whole job quickly and says which rank; nothing is left."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from cluster.harness import PROGRAMS, environment, lines, mpiexec, run, run_command

pytestmark = pytest.mark.full

SHM = Path("/dev/shm")


def segments() -> set[str]:
    return {path.name for path in SHM.glob("mpich_shm_*")} if SHM.is_dir() else set()


def in_use() -> set[str]:
    """Names under /dev/shm that a live process has mapped or open: another test's MPI job, run
    at the same time by another test process, holds its segments for a moment before its ranks
    unlink them."""
    names: set[str] = set()
    for process in Path("/proc").iterdir():
        if not process.name.isdigit():
            continue
        try:
            maps = (process / "maps").read_text(errors="replace")
            names.update(Path(line.split()[-1]).name for line in maps.splitlines() if "/dev/shm/" in line)
            for descriptor in (process / "fd").iterdir():
                target = os.readlink(descriptor)
                if target.startswith("/dev/shm/"):
                    names.add(Path(target).name)
        except OSError:
            continue  # ended meanwhile, or not ours to read
    return names


def left_behind(before: set[str], pattern: str = "mpich_shm_*") -> set[str]:
    """Segments matching ``pattern`` that are new since ``before`` and that no live process
    holds, twice half a second apart: what the job ended here left."""
    found = {path.name for path in SHM.glob(pattern)} - before
    if found:
        found -= in_use()
        time.sleep(0.5)
        found = (found & {path.name for path in SHM.glob(pattern)}) - in_use()
    return found


def job_processes(launcher: int) -> list[psutil.Process]:
    """mpiexec's descendants: its proxy and the ranks."""
    try:
        return psutil.Process(launcher).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def the_rank(job: list[psutil.Process], rank: int, program: str = "dies.py") -> psutil.Process:
    """The process that is rank ``rank`` of ``program``: the child of the guardian mpiexec started."""
    guarded = [p for p in job if p.environ().get("PMI_RANK") == str(rank) and program in " ".join(p.cmdline())]
    assert len(guarded) == 2
    (found,) = [p for p in guarded if p.ppid() in {q.pid for q in guarded}]
    return found


def started(command: list[str], env: dict[str, str], first: str) -> subprocess.Popen:
    """``command`` in a session of its own, once it printed a first line starting with ``first``
    (else the test fails, and the job is killed)."""
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, start_new_session=True)
    assert process.stdout is not None and process.stderr is not None
    line = process.stdout.readline()
    if not line.startswith(first):
        kill_the_job(process)
        pytest.fail(line + process.stderr.read())
    return process


def kill_the_job(process: subprocess.Popen) -> None:
    """Kill whatever is left of the job ``process`` leads (its session)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def kill_a_rank(ranks: int, rank: int, number: signal.Signals, *options: str, program: str = "dies.py") -> tuple[subprocess.Popen, list[psutil.Process], str, str]:
    """Run ``program`` on ``ranks`` ranks, kill rank ``rank`` with ``number`` once it printed its
    first line; the job, its processes, and its output once it ended (within 30 s)."""
    temporaries = {path.name for path in SHM.glob("mpich_shar_tmp*")}
    command = [mpiexec(), *options, "-n", str(ranks), sys.executable, "-m", "shoal", str(PROGRAMS / program)]
    process = started(command, environment(), "first:")
    job: list[psutil.Process] = []
    try:
        job = job_processes(process.pid)
        the_rank(job, rank, program).send_signal(number)
        stdout, stderr = process.communicate(timeout=30)
    finally:
        kill_the_job(process)
        process.wait(timeout=30)
        for stream in (process.stdout, process.stderr):  # left open when the job outlived the timeout
            if stream is not None:
                stream.close()
        psutil.wait_procs(job, timeout=10)  # then MPICH's files of a killed rank are all there
        for leftover in left_behind(temporaries, "mpich_shar_tmp*"):
            (SHM / leftover).unlink(missing_ok=True)  # MPICH's transfer buffer of a rank killed mid-transfer (docs/cluster.md)
    return process, job, stdout, stderr


@pytest.mark.parametrize("number", [signal.SIGKILL, signal.SIGSEGV])
def test_a_rank_killed_by_a_signal_is_named_and_the_job_ends(number: signal.Signals) -> None:
    before = segments()
    process, job, stdout, stderr = kill_a_rank(3, 2, number)
    assert process.returncode != 0
    assert "last:" not in stdout
    assert f"shoal: cluster rank 2 ({os.uname().nodename}) was killed by signal {int(number)} ({number.name})" in stderr
    _, alive = psutil.wait_procs(job, timeout=10)
    assert alive == []
    assert left_behind(before) == set()


@pytest.mark.parametrize("program", ["dies.py", "dies_while_sending.py"])
@pytest.mark.parametrize("rank", [0, 1])
def test_a_killed_rank_ends_the_job_where_the_launcher_does_not(rank: int, program: str) -> None:
    """With MPICH's clean-up off, no rank learns from MPI that another died: each watches the
    ranks of its host, and ends itself when one ends before the job does; also while the other
    rank is inside a node-engine batch with its sends tested from a thread (``SendProgress``,
    which ``dies_while_sending.py`` keeps busy)."""
    before = segments()
    process, job, stdout, stderr = kill_a_rank(2, rank, signal.SIGKILL, "-disable-auto-cleanup", program=program)
    assert process.returncode != 0
    assert "last:" not in stdout
    assert f"shoal: cluster rank {rank} ({os.uname().nodename}) was killed by signal 9 (SIGKILL)" in stderr
    assert re.search(rf"shoal: cluster rank {rank} \(pid \d+\) ended before the job did; ending rank {1 - rank} \(", stderr), stderr
    _, alive = psutil.wait_procs(job, timeout=10)
    assert alive == []
    assert left_behind(before) == set()


def test_a_guardian_passes_the_exit_code_and_signals_on(tmp_path: Path) -> None:
    program = tmp_path / "interrupted.py"
    program.write_text(
        "import os, signal, sys\n"
        "import numpy as np\n"
        "print('sum:', float(np.ones((64, 64)).sum()), flush=True)\n"
        "if len(sys.argv) > 1:\n"
        "    os.kill(os.getppid(), signal.SIGTERM)  # the guardian passes it on: the rank ends by it\n"
        "    signal.pause()\n"
        "sys.exit(7)\n"
    )
    exits = run(2, program)
    assert exits.returncode == 7, exits.stderr
    assert exits.stdout == "sum: 4096.0\n"
    assert "killed by signal" not in exits.stderr and "ended before the job did" not in exits.stderr
    terminated = run(2, program, "kill")
    assert terminated.returncode != 0
    assert "shoal: cluster rank 0 (" in terminated.stderr and "was killed by signal 15 (SIGTERM)" in terminated.stderr


@pytest.mark.parametrize("how", ["raise", "compute"])
def test_a_failing_rank_is_named_and_the_job_ends(how: str) -> None:
    before = segments()
    program = str(PROGRAMS / "dies.py")
    command = [
        mpiexec(), "-n", "2", sys.executable, "-m", "shoal", program,
        ":", "-n", "1", sys.executable, str(PROGRAMS / "failing_rank.py"), how, program,
    ]  # fmt: skip
    result = run_command(command, timeout=60)
    assert result.returncode != 0
    assert "last:" not in result.stdout
    if how == "raise":
        assert "cluster rank 2 (" in result.stderr and "injected failure in the flush" in result.stderr
        assert 'failing_rank.py", line' in result.stderr and "in failing_run" in result.stderr  # a bug's traceback, for its report
    else:  # rank 0 raises it at the program's line, as an error naming the rank
        assert "EngineError: a batch failed on the cluster: rank 2: ArithmeticError: injected failure" in result.stderr
        assert re.search(r'dies.py", line \d+, in <module>', result.stderr)
    assert left_behind(before) == set()


def test_numpy_errors_and_exit_codes_come_from_rank_0() -> None:
    result = run(3, PROGRAMS / "raises.py", "exit")
    assert result.returncode == 3
    assert lines(result.stdout, "caught:") == ["operands could not be broadcast together with shapes (64,64) (64,65)"]
    assert lines(result.stdout, "checksum:") == ["12288.0"]
    failed = run(2, PROGRAMS / "raises.py", "raise")
    assert failed.returncode == 1
    assert "ValueError: matmul: Input operand 1 has a mismatch in its core dimension 0" in failed.stderr
    assert 'raises.py", line 17, in <module>' in failed.stderr


@pytest.mark.parametrize("mode", ["on", "off"])
def test_figure_6_exchange_does_not_deadlock(mode: str) -> None:
    """Paper 003 Figure 6: each rank's receive matches a send its peer makes only later."""
    expected = subprocess.run([sys.executable, str(PROGRAMS / "figure6.py")], capture_output=True, text=True, timeout=60, check=True).stdout
    result = run(2, PROGRAMS / "figure6.py", env=environment(SHOAL_LATENCY_HIDING=mode, SHOAL_CLUSTER_MIN_BYTES="0"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected


def test_info_shows_ranks_hosts_and_the_library() -> None:
    result = run_command([mpiexec(), "-n", "2", sys.executable, "-m", "shoal", "info"], timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.count("engine stack: cluster:node") == 1  # rank 0 prints for every rank
    (line,) = [line for line in result.stdout.splitlines() if line.startswith("cluster:")]
    assert line.startswith("cluster: 2 ranks on 1 host(s); MPI library: MPICH")
    alone = subprocess.run([sys.executable, "-m", "shoal", "info"], capture_output=True, text=True, env=environment(), timeout=60)
    assert "cluster: not under mpiexec (one process); MPI library: MPICH" in alone.stdout


def test_a_program_that_never_uses_the_cluster_ends_every_rank(tmp_path: Path) -> None:
    program = tmp_path / "hello.py"
    program.write_text("import numpy as np\nprint('sum:', np.arange(5).sum())\n")
    result = run(3, program, env=environment(SHOAL_EAGER_THRESHOLD="1000000"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == "sum: 10\n"


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize(
    "text",
    ["print('hello')\n", "import runpy, sys\nrunpy.run_path(sys.argv[1], run_name='__main__')\n"],
    ids=["no NumPy", "NumPy only in a program it runs"],
)
def test_a_program_that_never_starts_shoal_ends_every_rank(tmp_path: Path, ranks: int, text: str) -> None:
    """The other ranks start their engines (and time the link with rank 0) only when rank 0
    starts the cluster; a program that never does must not leave them waiting for it."""
    inner = tmp_path / "inner.py"
    inner.write_text("import numpy as np\nprint('sum:', float(np.ones((300, 300)).sum()))\n")
    program = tmp_path / "outer.py"
    program.write_text(text)
    result = run(ranks, program, str(inner), timeout=60, env=environment(SHOAL_CLUSTER_HALO_SWEEPS="auto"))
    assert result.returncode == 0, result.stderr
    assert result.stdout in ("hello\n", "sum: 90000.0\n")


@pytest.mark.timeout(400)
@pytest.mark.parametrize("delay", [0.0, 0.3, 0.7, 1.1, 1.6, 2.2])
def test_ctrl_c_ends_the_job_with_the_programs_traceback(delay: float) -> None:
    """Ctrl-C (SIGINT to ``mpiexec``, which passes it to every rank) at any point of a loop of
    batches and fetches: the job ends, rank 0 prints ``KeyboardInterrupt`` with a traceback that
    ends at the program's line, as ``python app.py`` would. Rank 0 interrupted in the middle of a
    command (its data sent, its plan not run) once left the others waiting in MPI: a hang."""
    import time

    command = [mpiexec(), "-n", "2", sys.executable, "-m", "shoal", str(PROGRAMS / "interrupted.py")]
    process = started(command, environment(SHOAL_VERIFY="0"), "running")
    try:
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        kill_the_job(process)
    assert process.returncode != 0
    traceback = stderr[stderr.index("Traceback (most recent call last):") :]
    frames = re.findall(r'File "([^"]+)", line \d+', traceback)
    assert frames and frames[-1].endswith("interrupted.py") and "\nKeyboardInterrupt\n" in traceback, stderr
    assert "cluster rank" not in stderr, stderr  # the death Ctrl-C asks for is not a failure to name

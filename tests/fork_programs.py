"""Programs that fork (a ``multiprocessing`` pool, a ``ProcessPoolExecutor``, ``os.fork``) with
arrays below and above the eager threshold, run under ``python``, ``python -m shoal``, a server
and MPI ranks by ``tests/test_fork_children.py``. Values are integers (in floats too), so every
sum is exact in any order and the outputs compare byte for byte."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

from cluster.harness import Run, run_in_session

RUN_TIMEOUT = 120

POOL = """
import multiprocessing
import numpy as np

N = 600_000  # above the eager threshold
big = np.arange(N, dtype=np.float64) * 2.0
small = np.arange(1000, dtype=np.int64) + 7
pending = big + 1.0  # recorded, not yet run, when the pool forks


def work(i):
    part = pending[i * 100_000:(i + 1) * 100_000]
    big[:5] = -1.0  # the child's copy only
    whole = pending * (i + 1) - big  # large work in the child
    return float(part.sum()), int(small[i::4].sum()), part[:3] * 2, whole, float(whole[:7].sum())


if __name__ == "__main__":
    print(float(big[10]))  # the parent ran a batch before the fork
    with multiprocessing.get_context("fork").Pool(2) as pool:
        results = pool.map(work, range(4))
    for total, count, head, whole, seven in results:
        print(total, count, head.tolist(), whole.shape, whole.dtype, float(whole.sum()), seven)
    later = pending * 3 - big
    print(float(later.sum()), float(big[:5].sum()), int(small.sum()))
"""

EXECUTOR = """
import concurrent.futures
import multiprocessing
import numpy as np

N = 800_000
a = np.arange(N, dtype=np.int64)
b = a % 7


def count(k):
    return int((b == k).sum()), a[:5] * k, b[k::2] + k


if __name__ == "__main__":
    print(int((a * 2 + b).sum()))  # the parent ran a batch before the fork
    fork = multiprocessing.get_context("fork")
    with concurrent.futures.ProcessPoolExecutor(2, mp_context=fork) as executor:
        for n, head, tail in executor.map(count, range(7)):
            print(n, head.tolist(), tail.shape, int(tail.sum()))
    b += 1
    print(int(b.sum()), int(a[-3:].sum()))
"""

OS_FORK = """
import os
import sys
import numpy as np

N = 700_000
a = np.arange(N, dtype=np.int64)
b = a * 3
print("before", int(b[:4].sum()), flush=True)

read, write = os.pipe()
pid = os.fork()
if pid == 0:  # ends with os._exit, as a worker does
    os.close(read)
    os.write(write, repr(int((b * 2 + a).sum())).encode())
    os._exit(0)
os.close(write)
answer = os.read(read, 100).decode()
os.close(read)
print("child said", answer, os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))

b += 1  # after the fork: the next child sees it, the first did not
pid = os.fork()
if pid == 0:  # ends as a program does: atexit handlers, the exit status it asks for
    b[:10] = -1
    print("second child", int(b.sum()), int((a + b)[N - 1]), flush=True)
    sys.exit(3)
print("second child status", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))

pid = os.fork()
if pid == 0:  # an uncaught error: its traceback, status 1
    print("third child", int(a.reshape(2, -1)[1].sum()), flush=True)
    a.reshape(3, 5)
print("third child status", os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
print("parent", int(b.sum()), int(b[:3].sum()))
"""

PROGRAMS = {"pool": POOL, "executor": EXECUTOR, "os_fork": OS_FORK}


def write_program(directory: Path, name: str) -> Path:
    """``PROGRAMS[name]`` as a file in ``directory``."""
    path = directory / f"{name}.py"
    path.write_text(textwrap.dedent(PROGRAMS[name]))
    return path


def run(command: list[str], env: dict[str, str], cwd: Path, timeout: float = RUN_TIMEOUT) -> Run:
    """``command`` in a session of its own, killed whole past ``timeout`` (the test fails); the
    test also fails if a process of that session outlives the run (a pool worker, a rank)."""
    return run_in_session(command, timeout, env, cwd, fail_if_left=True)


def python(program: Path, cwd: Path) -> Run:
    """The reference: ``python program``."""
    return run([sys.executable, str(program)], dict(os.environ), cwd)


def shoal(program: Path, cwd: Path, **extra: str) -> Run:
    """``python -m shoal program`` with ``extra`` settings."""
    return run([sys.executable, "-m", "shoal", str(program)], {**os.environ, **extra}, cwd)


def same(reference: Run, result: Run) -> None:
    """``result`` printed what ``reference`` printed, ended with its status, and its error (if
    any) ends with the same line."""
    assert result.stdout == reference.stdout, result.stderr[-3000:]
    assert result.returncode == reference.returncode, result.stderr[-3000:]
    assert _last_lines(result.stderr) == _last_lines(reference.stderr), result.stderr[-3000:]


def _last_lines(text: str) -> list[str]:
    """The lines of a standard error that end tracebacks."""
    return [line for line in text.splitlines() if line and not line.startswith((" ", "Traceback"))]

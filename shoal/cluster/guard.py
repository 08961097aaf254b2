"""A rank killed by a signal is named: each rank runs under a small guardian process.

Under ``mpiexec``, a rank killed by a signal (SIGKILL, SIGSEGV, the kernel's out-of-memory killer)
cannot say so, and MPICH's ``mpiexec`` kills every other rank at once, so no rank outlives the
dead one to name it. So before MPI starts, :func:`guard` forks: the child goes on to be the rank
(it inherits the process manager's connection and initialises MPI itself); the parent, the
process ``mpiexec`` started, only waits for it. When the rank ends by a signal the guardian prints

    shoal: cluster rank 2 (host) was killed by signal 9 (SIGKILL)

and exits with 128 + the signal's number, so ``mpiexec`` ends the other ranks and returns
non-zero; otherwise it exits with the rank's own exit code. Signals sent to the guardian
(``mpiexec`` forwarding Ctrl-C, say) are passed on to the rank, and the rank is killed if its
guardian dies (``PR_SET_PDEATHSIG``), so no rank outlives the job. Linux only; elsewhere (or if
``fork`` fails) the rank runs unguarded as before.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import socket
import sys
from collections.abc import Mapping

RANK_VARIABLES = ("PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK")
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
PR_SET_PDEATHSIG = 1


def rank_of(environ: Mapping[str, str]) -> str:
    """This process's rank as the launcher gave it, or ``?``."""
    return next((environ[name] for name in RANK_VARIABLES if environ.get(name)), "?")


def describe(status: int, rank: str, host: str) -> str | None:
    """The line naming a rank that ended by a signal (``status`` as :func:`os.waitpid` gives
    it); None for a rank that exited."""
    if not os.WIFSIGNALED(status):
        return None
    number = os.WTERMSIG(status)
    try:
        name = signal.Signals(number).name
    except ValueError:
        name = "unknown signal"
    return f"shoal: cluster rank {rank} ({host}) was killed by signal {number} ({name})\n"


def guard() -> None:
    """Fork a guardian that waits for this rank; returns in the rank (the child) only."""
    if not sys.platform.startswith("linux"):
        return
    guardian = os.getpid()
    sys.stdout.flush()
    sys.stderr.flush()
    try:
        child = os.fork()
    except OSError:
        return
    if child == 0:
        _die_with(guardian)
        # A group of its own: ``mpiexec`` passes Ctrl-C on to the guardian's process group, and
        # the guardian forwards it too, so a rank in that group got two for one key press.
        with contextlib.suppress(OSError):
            os.setpgid(0, 0)
        return
    os._exit(_wait(child, rank_of(os.environ), socket.gethostname()))


def _die_with(guardian: int) -> None:
    """In the rank: be killed when the guardian dies, also if it died already."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        pass
    if os.getppid() != guardian:
        os._exit(1)


def _wait(child: int, rank: str, host: str) -> int:
    """In the guardian: pass signals on to ``child``, wait for it, and report how it ended."""

    def forward(number: int, _frame: object) -> None:
        try:
            os.kill(child, number)
        except ProcessLookupError:
            pass

    for number in FORWARDED:
        signal.signal(number, forward)
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
        except ChildProcessError:
            return 1
    line = describe(status, rank, host)
    if line is None:
        return os.waitstatus_to_exitcode(status)
    if os.WTERMSIG(status) == signal.SIGINT:  # Ctrl-C: Python's own death on KeyboardInterrupt
        return 128 + signal.SIGINT
    os.write(2, line.encode())
    return 128 + os.WTERMSIG(status)

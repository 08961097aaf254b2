"""The compile worker process as the engine sees it: started on first use, asked one kernel at a
time by the compile thread, and at exit handed the rest of the work and left to finish alone.

The worker is started in a session of its own (no terminal signals reach it) with stderr to
``/dev/null`` and pipes to this process only, so a worker that outlives the program holds
nothing of the program's terminal or of a pipe that someone reads the program's output from.
Handing over (:meth:`CompileProcess.detach`) sends the modules still to compile and ``detach
<seconds>``, closes the pipes and returns at once; the worker compiles them, writes the cache
and exits by itself (``worker.py``). A thread waits for it so that a process that goes
on running leaves no zombie behind.
"""

from __future__ import annotations

import enum
import os
import select
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from shoal.settings import choice_setting

if TYPE_CHECKING:
    import psutil

WORKER_COMMAND = [sys.executable, "-c", "from shoal.engine.node.compile.worker import main; main()"]


@dataclass(frozen=True)
class Job:
    """A kernel module to compile, with what its compile-cost estimate needs: how many steps the
    kernel runs and whether it stores rows through a ring (``costs.py``)."""

    path: Path
    steps: int
    ring: bool

    def line(self) -> str:
        return f"{self.path}\t{self.steps}\t{int(self.ring)}\n"

    @classmethod
    def parse(cls, line: str) -> Job:
        """The job of a :meth:`line` (a bare path: a kernel of unknown size, -1 steps)."""
        path, _, size = line.strip().partition("\t")
        steps, _, ring = size.partition("\t")
        try:
            return cls(Path(path), int(steps), ring == "1")
        except ValueError:
            return cls(Path(path), -1, False)


class ExitMode(enum.Enum):
    """What closing the engine does with a kernel being compiled and the kernels queued."""

    DETACH = "detach"  # hand them to the worker and return at once; it finishes alone
    WAIT = "wait"  # the same, then wait for the worker to finish (benchmarks, tests)
    KILL = "kill"  # kill the worker and drop the work

    @classmethod
    def parse(cls, text: str) -> ExitMode:
        return choice_setting(cls, "SHOAL_COMPILE_EXIT", text)


class CompileProcess:
    """One compile worker process at a time; :meth:`request` is called by one thread only."""

    def __init__(self) -> None:
        self._popen: subprocess.Popen[bytes] | None = None
        self._lock = threading.Lock()  # between the requesting thread and the closing one
        self._stopping = False
        self._wake_read, self._wake_write = os.pipe()
        self._unsent: list[Job] = []
        self._in_flight = False  # a request was sent and not answered

    @property
    def running(self) -> bool:
        return self._popen is not None and self._popen.poll() is None

    def request(self, job: Job) -> tuple[str | None, bool]:
        """Have the worker compile ``job``: its answer line ('' if it exited) and
        whether this request started it. The answer is None once :meth:`stop_waiting` was
        called: the module then goes to the worker when it is handed over."""
        with self._lock:
            if self._stopping:
                self._unsent.append(job)
                return None, False
            started = not self.running
            if started:
                self._popen = _start_worker()
            popen = self._popen
            assert popen is not None and popen.stdin is not None and popen.stdout is not None
            try:
                popen.stdin.write(job.line().encode())
                popen.stdin.flush()
            except OSError:
                return "", started
            self._in_flight = True
        answer = self._read_answer(popen.stdout.fileno())
        if answer is not None:
            with self._lock:
                self._in_flight = False
        return answer, started

    def _read_answer(self, descriptor: int) -> str | None:
        received = b""
        poller = select.poll()
        poller.register(descriptor, select.POLLIN)
        poller.register(self._wake_read, select.POLLIN)
        while not received.endswith(b"\n"):
            if any(ready == self._wake_read for ready, _ in poller.poll()):
                return None
            chunk = os.read(descriptor, 4096)
            if not chunk:
                return ""
            received += chunk
        return received.decode(errors="replace").strip()

    def stop_waiting(self) -> None:
        """Make a :meth:`request` waiting for an answer return None, and later ones too."""
        with self._lock:
            self._stopping = True
        os.write(self._wake_write, b"x")

    def detach(self, jobs: list[Job], seconds: float) -> subprocess.Popen[bytes] | None:
        """Hand ``jobs`` (and what :meth:`request` did not send) to the worker, starting one if
        needed, tell it to finish within ``seconds`` and let go of it; the worker, or None. It
        remembers the compile costs it measures from then on itself."""
        with self._lock:
            jobs = self._unsent + jobs
            self._unsent = []
            popen = self._popen
            self._popen = None
        if popen is not None and (popen.poll() is not None or not (jobs or self._in_flight)):
            _end(popen)  # it has nothing to do: ending it now leaves nothing running
            popen = None
        if popen is None and jobs:
            try:
                popen = _start_worker()
            except OSError:
                return None
        if popen is None:
            return None
        assert popen.stdin is not None
        commands = "".join(job.line() for job in jobs) + f"detach {seconds:.3f}\n"
        try:
            popen.stdin.write(commands.encode())
            popen.stdin.flush()
        except OSError:
            pass  # it died: there is nothing to hand over
        _close_pipes(popen)
        threading.Thread(target=popen.wait, name="shoal-compiler-reaper", daemon=True).start()
        return popen

    def kill(self) -> None:
        """Kill the worker and wait for it."""
        with self._lock:
            popen = self._popen
            self._popen = None
        if popen is not None:
            _end(popen)

    def close(self) -> None:
        """Release the wake-up pipe (after :meth:`detach` or :meth:`kill`)."""
        for descriptor in (self._wake_read, self._wake_write):
            if descriptor >= 0:
                os.close(descriptor)
        self._wake_read = self._wake_write = -1


def _end(popen: subprocess.Popen[bytes]) -> None:
    """Kill the worker, wait for it and close its pipes."""
    popen.kill()
    popen.wait()
    _close_pipes(popen)


def _close_pipes(popen: subprocess.Popen[bytes]) -> None:
    for stream in (popen.stdin, popen.stdout):
        if stream is not None:
            try:
                stream.close()
            except OSError:
                pass


def _start_worker() -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        WORKER_COMMAND, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True
    )


def workers_for(cache_root: Path) -> list[psutil.Process]:
    """Compile workers running for ``SHOAL_CACHE_DIR=cache_root``, whoever started them (for
    benchmarks and tests that wait for workers finishing alone)."""
    import psutil

    found = []
    for process in psutil.process_iter(["cmdline"]):
        try:
            command = " ".join(process.info["cmdline"] or ())
            if WORKER_COMMAND[-1] in command and process.environ().get("SHOAL_CACHE_DIR") == str(cache_root):
                found.append(process)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found

"""The MPI session of ``mpiexec -n N python -m shoal app.py``: who we are, and rank 0's commands.

:func:`launched` tells from the environment alone (no MPI import) whether ``mpiexec`` started
this process. :func:`start` then initialises MPI, makes the cluster the top of the stack
(``SHOAL_STACK=cluster:...``), divides the host's cores between the ranks on it and keeps a
:class:`Session` with two communicators of its own: one for rank 0's commands, one for data.

A command is a header (kind, payload length) and a payload, both broadcast from rank 0 as raw
bytes; the other ranks decode and verify the payload (:mod:`shoal.bytecode.verify`) before using
it. Nothing is unpickled.
"""

from __future__ import annotations

import array
import atexit
import enum
import os
import signal
import stat
import sys
import time
import traceback
from collections.abc import Mapping
from typing import NoReturn

import numpy as np

from shoal import settings, trace
from shoal.cluster import peers, waiting
from shoal.interrupts import hold_interrupts, ignore_interrupts, interrupts_held

LAUNCH_VARIABLES = ("PMI_RANK", "PMI_SIZE", "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS")
# MPICH's shared-memory cells hold 8192 bytes with their header, and from 8192 bytes on a message
# is copied by the receiver (CMA); one between (a row of 1016-1023 doubles) went in two cells
# whose second the sender only sent at its next MPI call, after its whole node-engine batch.
# Cells of 16 KiB carry every message below 8192 bytes at once. Set only where the user has not.
MPICH_DEFAULTS = {"MPIR_CVAR_CH4_SHM_POSIX_IQUEUE_CELL_SIZE": "16384"}


class Command(enum.IntEnum):
    EXECUTE = 1
    FETCH = 2
    SHUTDOWN = 3
    REPLAY = 4  # a batch as the number of a plan every rank keeps (shoal.cluster.replayed)
    START = 5  # the program's first use of Shoal's arrays: every rank starts its engine
    DRAW_AHEAD = 6  # a large random draw the program made: ranks draw their parts while idle
    ALIKE = 7  # a batch whose repeated loop iterations refer to an earlier one (shoal.cluster.alike)


def launched(environ: Mapping[str, str] | None = None) -> bool:
    """True if ``mpiexec`` (MPICH's Hydra, Open MPI or a PMIx launcher) started this process."""
    environ = os.environ if environ is None else environ
    if settings.CLUSTER.value(environ=environ) == "off":
        return False
    return any(environ.get(name) for name in LAUNCH_VARIABLES)


class Session:
    """This process's place in the MPI job and its communicators."""

    def __init__(self) -> None:
        from mpi4py import MPI

        world = MPI.COMM_WORLD
        self.world = world
        self.rank: int = world.Get_rank()
        self.ranks: int = world.Get_size()
        self.control = world.Dup()
        self.data = world.Dup()
        self.host = MPI.Get_processor_name()
        local = world.Split_type(MPI.COMM_TYPE_SHARED, key=self.rank)
        self.local_ranks: int = local.Get_size()
        self.yielding = _yielding(self.local_ranks)  # how waits wait (shoal.cluster.waiting)
        self._idle_long = False  # the last wait for a command was long
        _unlink_shared_segments(local)
        local.Free()
        identities = np.empty((self.ranks, peers.FIELDS), dtype=np.int64)
        world.Allgather(peers.identity(), identities)
        self.watch = peers.PeerWatch(self.rank, self.host, peers.neighbours(identities, self.rank))
        world.Barrier()
        self.origin = time.perf_counter()  # the ranks' common time origin: their traces align on it
        self.finished = False
        self.pid = os.getpid()  # a child forked from this rank is not the rank

    # ------------------------------------------------------------------ commands

    def send(self, command: Command, payload: bytes = b"", ints: list[int] | None = None) -> None:
        """Rank 0: broadcast ``command`` with ``payload`` and ``ints`` to every rank, in two
        broadcasts: a header (kind, payload length, count of integers), then the payload with the
        integers after it."""
        values = np.array(ints or [], dtype=np.int64)
        header = np.array([int(command), len(payload), values.size], dtype=np.int64)
        waiting.wait(self.control.Ibcast(header, root=0), yielding=self.yielding)
        if payload or values.size:
            self.control.Bcast(np.concatenate([np.frombuffer(payload, dtype=np.uint8), values.view(np.uint8)]), root=0)
        if command is Command.SHUTDOWN:
            self.finished = True

    def receive(self, max_bytes: int = 1 << 40, max_ints: int = 1 << 24) -> tuple[Command, bytes, list[int]]:
        """Another rank: the next command from rank 0, its payload and integers (a malformed
        header raises)."""
        header = np.zeros(3, dtype=np.int64)
        # The rank idles here while rank 0 runs the program's Python, and its node engine alone
        # for work on arrays that live there. After a long idle, the next one gives the
        # processor up: MPI's busy wait took it from rank 0's threads (and BLAS's).
        began = time.perf_counter()
        waiting.wait(self.control.Ibcast(header, root=0), yielding=self.yielding or self._idle_long)
        self._idle_long = time.perf_counter() - began > waiting.LONG_IDLE_SECONDS
        kind, length, count = (int(value) for value in header)
        try:
            command = Command(kind)
        except ValueError:
            raise ValueError(f"rank 0 sent an unknown command {kind}") from None
        self.finished = command is Command.SHUTDOWN
        if not 0 <= length <= max_bytes:
            raise ValueError(f"rank 0 announced a payload of {length} bytes")
        if not 0 <= count <= max_ints:
            raise ValueError(f"rank 0 announced {count} integers")
        buffer = np.empty(length + 8 * count, dtype=np.uint8)
        if buffer.size:
            arrived = time.perf_counter()
            self.control.Bcast(buffer, root=0)
            if trace.TRACER is not None:
                trace.TRACER.complete("receive a command", "communication", arrived, time.perf_counter(), {"bytes": int(buffer.size)})
        return command, buffer[:length].tobytes(), [int(value) for value in buffer[length:].view(np.int64)]

    def gather_text(self, text: str | None) -> list[str | None] | None:
        """Rank 0: each rank's ``text`` (None where a rank has none); None at the other ranks."""
        return self.gather_status(text, True)[0]

    def gather_status(self, text: str | None, flag: bool) -> tuple[list[str | None] | None, bool]:
        """Each rank's ``text`` at rank 0 (as :meth:`gather_text`), and at every rank whether
        every rank's ``flag`` is true."""
        from mpi4py import MPI

        data = b"" if text is None else text.encode("utf-8", "replace")
        lengths = np.zeros((self.ranks, 2), dtype=np.int64)
        # every rank learns every length, so when no rank has text (a batch that ran everywhere)
        # one collective is the whole exchange
        mine = np.array([len(data) if text is not None else -1, int(flag)], dtype=np.int64)
        waiting.wait(self.control.Iallgather(mine, lengths), yielding=self.yielding)
        if self.finished:  # every rank reached the shutdown: peers may exit now
            self.watch.disarm()
        flags, lengths = bool(lengths[:, 1].all()), lengths[:, 0]
        if bool((lengths < 0).all()):
            return ([None] * self.ranks if self.rank == 0 else None), flags
        counts = np.maximum(lengths, 0)
        received = np.empty(int(counts.sum()), dtype=np.uint8)
        displacements = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64)
        send = np.frombuffer(data, dtype=np.uint8).copy() if data else np.empty(0, dtype=np.uint8)
        self.control.Gatherv(send, [received, counts.tolist(), displacements.tolist(), MPI.BYTE], root=0)
        if self.rank != 0:
            return None, flags
        texts: list[str | None] = []
        for rank in range(self.ranks):
            if lengths[rank] < 0:
                texts.append(None)
            else:
                begin = int(displacements[rank])
                texts.append(received[begin : begin + int(counts[rank])].tobytes().decode("utf-8", "replace"))
        return texts, flags

    def abort(self, message: str, code: int = 1, error: BaseException | None = None) -> None:
        """Print ``message`` and end every rank of the job now (or, if a peer on this host has
        ended, end this rank naming the peer: the failure was that peer's death). ``error``: the
        exception that ended this rank; its traceback comes first where it is Shoal's own failure
        (not an interrupt, not an MPI call that failed), for a report of it."""
        ignore_interrupts()  # a second Ctrl-C here (a terminal's and mpiexec's) would skip the abort
        self.watch.end_if_a_peer_ended()
        if isinstance(error, Exception) and not type(error).__module__.startswith("mpi4py"):
            sys.stderr.write("".join(traceback.format_exception(error)))
        sys.stderr.write(f"shoal: {message}\n")
        sys.stderr.flush()
        _wait_until_read(sys.stderr)
        self.world.Abort(code)

    def finish(self) -> None:
        """Rank 0 at exit: release the other ranks if the program never started the cluster
        (they answer a shutdown with their reports, unused here). Not in a child forked from the
        rank: it must not call MPI."""
        if self.rank == 0 and not self.finished and os.getpid() == self.pid:
            with interrupts_held(deliver=False):
                self.send(Command.SHUTDOWN)
                self.gather_text(None)


def _wait_until_read(stream: object, seconds: float = 2.0) -> None:
    """Wait (at most ``seconds``) until the launcher has read what this rank wrote to ``stream``.

    ``mpiexec`` forwards a rank's output from a pipe; on ``MPI_Abort`` it ends every process, and
    a line still in the pipe is lost, so a failed rank could end the job without being named.
    Once the pipe is empty the launcher has taken the line, ahead of the abort."""
    try:
        import fcntl
        import termios

        descriptor = stream.fileno()  # type: ignore[attr-defined]
        if not stat.S_ISFIFO(os.fstat(descriptor).st_mode):
            return
        waiting_bytes = array.array("i", [0])
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            fcntl.ioctl(descriptor, termios.FIONREAD, waiting_bytes)
            if waiting_bytes[0] == 0:
                return
            time.sleep(0.001)
    except (AttributeError, ImportError, OSError, ValueError):
        return


def _yielding(local_ranks: int) -> bool:
    """Whether waits give the processor up (``SHOAL_CLUSTER_WAIT``; ``auto``: where this host
    runs more ranks than it has cores)."""
    choice = settings.CLUSTER_WAIT.value()
    if choice == "auto":
        from shoal.threads import available_cores

        return local_ranks > available_cores()
    return choice == "yield"


def _unlink_shared_segments(local: object) -> None:
    """Remove the names of the MPI library's shared-memory segments in /dev/shm once every rank of
    this host has mapped them: the memory lives on while mapped, and a job that is killed leaves
    no segment behind (MPICH unlinks them only in ``MPI_Finalize``)."""
    try:
        with open("/proc/self/maps", encoding="utf-8", errors="replace") as maps:
            mine = sorted({line.split()[-1] for line in maps if "/dev/shm/mpich" in line})
    except OSError:
        mine = []
    local.Barrier()  # type: ignore[attr-defined]
    if local.Get_rank() == 0:  # type: ignore[attr-defined]
        for path in mine:
            try:
                os.unlink(path)
            except OSError:
                pass
    local.Barrier()  # type: ignore[attr-defined]


_SESSION: Session | None = None


def current() -> Session | None:
    """The session, once :func:`start` ran."""
    return _SESSION


def start() -> Session:
    """Initialise MPI and the session; put the cluster on top of the stack; divide the cores."""
    global _SESSION
    if _SESSION is not None:
        return _SESSION
    import mpi4py

    mpi4py.rc.threads = True
    mpi4py.rc.thread_level = "serialized"
    for name, value in MPICH_DEFAULTS.items():
        os.environ.setdefault(name, value)
    session = Session()
    _SESSION = session
    stack = settings.STACK.value() or ""
    names = [name for name in stack.split(":") if name]
    if "cluster" not in names:
        os.environ[settings.STACK.name] = ":".join(["cluster", *names])
    if not settings.NUM_THREADS.is_set():
        from shoal.threads import available_cores

        os.environ[settings.NUM_THREADS.name] = str(max(1, available_cores() // max(1, session.local_ranks)))
    atexit.register(session.finish)
    if session.rank == 0:
        hold_interrupts()
    return session


def in_forked_child() -> bool:
    """True in a child process forked from this job's rank (a ``multiprocessing`` pool's worker,
    ``os.fork``): it must never call MPI."""
    return _SESSION is not None and os.getpid() != _SESSION.pid


def end_forked_child(error: BaseException | None) -> NoReturn:
    """End a child forked from rank 0 whose program ended (``error``: what it raised) as the
    interpreter would (report an uncaught error or a ``SystemExit`` message, run the ``atexit``
    handlers, flush, exit with the same status) but without finalizing the interpreter, which
    would finalize MPI: ``MPI_Finalize`` in a forked child waits for ranks that never answer.
    Pool workers never come here (they end with ``os._exit``)."""
    status = 0
    if isinstance(error, SystemExit):
        code = error.code
        if code is not None and not isinstance(code, int):
            print(code, file=sys.stderr)
        status = 0 if code is None else code if isinstance(code, int) else 1
    elif error is not None:
        sys.excepthook(type(error), error, error.__traceback__)
        status = 1
    threading_shutdown = getattr(sys.modules.get("threading"), "_shutdown", None)
    for step in (threading_shutdown, atexit._run_exitfuncs):  # what the interpreter does next
        try:
            if step is not None:
                step()
        except BaseException:  # reported as the interpreter reports them
            sys.excepthook(*sys.exc_info())
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (AttributeError, OSError, ValueError):
            pass
    if isinstance(error, KeyboardInterrupt):
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)  # dies of it, as the interpreter does
    os._exit(status & 0xFF)


def library_version() -> str:
    """The MPI library's name and version (first line), without starting MPI."""
    import mpi4py

    mpi4py.rc.initialize = False
    mpi4py.rc.finalize = False
    from mpi4py import MPI

    return " ".join(MPI.Get_library_version().splitlines()[0].split())

"""Ending a rank whose peer on the same host died, where the launcher does not end the job.

MPI does not tell a rank that another one died: a rank waiting for rank 0's next command waits
forever when rank 0 is killed and the launcher does not end the job (MPICH's ``mpiexec
-disable-auto-cleanup``; a clean-up that loses a race). So every rank watches the other ranks of
its host through process file descriptors (``pidfd_open``), polled by a thread that does no MPI.
When a peer ends before the job reached its shutdown, the rank gives the launcher
:data:`GRACE_SECONDS` to end the job, then prints which rank ended and exits with status 1.

Peers are on "the same host" when they share the kernel (boot id) and the process-id namespace;
ranks elsewhere are left to the launcher. Where ``pidfd_open`` is missing, nothing is watched.
"""

from __future__ import annotations

import os
import select
import sys
import threading
import time
import uuid

import numpy as np

GRACE_SECONDS = 2.0
PEER_END_SECONDS = 1.0  # a rank about to abort waits this long to see whether a peer ended
FIELDS = 5  # boot id (two words), pid namespace (device, inode), pid


def identity() -> np.ndarray:
    """This process as :data:`FIELDS` int64 words: which kernel, which pid namespace, which pid."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as file:
            boot = uuid.UUID(file.read().strip()).bytes
        namespace = os.stat("/proc/self/ns/pid")
    except (OSError, ValueError):
        return np.zeros(FIELDS, dtype=np.int64)  # nothing in common with any peer
    words = np.frombuffer(boot, dtype=np.int64)
    return np.array([words[0], words[1], namespace.st_dev, namespace.st_ino, os.getpid()], dtype=np.int64)


def neighbours(identities: np.ndarray, rank: int) -> dict[int, int]:
    """The pids of the ranks sharing this rank's kernel and pid namespace, by rank
    (``identities``: every rank's :func:`identity`, one row each)."""
    mine = identities[rank]
    if not mine[:4].any():
        return {}
    return {peer: int(row[4]) for peer, row in enumerate(identities) if peer != rank and (row[:4] == mine[:4]).all() and row[4] > 0}


class PeerWatch:
    """A thread that ends this rank when a watched peer ends while the watch is armed."""

    def __init__(self, rank: int, host: str, peers: dict[int, int]) -> None:
        self.rank = rank
        self.host = host
        self.armed = threading.Event()
        self.armed.set()
        self._descriptors: dict[int, tuple[int, int]] = {}  # fd -> (rank, pid)
        for peer, pid in peers.items():
            try:
                self._descriptors[os.pidfd_open(pid)] = (peer, pid)
            except (AttributeError, OSError):
                continue  # no pidfd here, or the peer is gone already (the launcher's to report)
        if self._descriptors:
            threading.Thread(target=self._watch, name="shoal-peer-watch", daemon=True).start()

    def disarm(self) -> None:
        """The job reached its end: peers may exit now."""
        self.armed.clear()

    def end_if_a_peer_ended(self) -> None:
        """If a watched peer has ended (a rank whose MPI call failed because its neighbour died),
        end this rank as the watch would, naming that peer, instead of aborting the job: an
        ``MPI_Abort`` now would end the launcher's processes before they report how the peer
        died."""
        if not self.armed.is_set() or not self._descriptors:
            return
        ended, _, _ = select.select(list(self._descriptors), [], [], PEER_END_SECONDS)  # its end may be signalled just after the failed call
        if ended:
            self._end(*self._descriptors[ended[0]])

    def _end(self, peer: int, pid: int) -> None:
        time.sleep(GRACE_SECONDS)  # the launcher may end this rank first
        if self.armed.is_set():
            sys.stderr.write(
                f"shoal: cluster rank {peer} (pid {pid}) ended before the job did; "
                f"ending rank {self.rank} ({self.host})\n"
            )
            sys.stderr.flush()
            os._exit(1)

    def _watch(self) -> None:
        poller = select.poll()
        for fd in self._descriptors:
            poller.register(fd, select.POLLIN)
        while self.armed.is_set():
            ready = poller.poll()
            if not self.armed.is_set() or not ready:
                break
            self._end(*self._descriptors[ready[0][0]])
            break
        for fd in self._descriptors:
            os.close(fd)


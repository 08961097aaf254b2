"""A node-wide counting semaphore that a killed process cannot leave taken.

One small file holds one lock byte per token plus a turnstile byte.  Tokens are
open-file-description (OFD) write locks on those bytes: the kernel drops them
when the last descriptor of the holder closes, which includes any death, even
SIGKILL.  OFD locks belong to an open file, not to a process, so threads of one
process compete like processes do.

Only the holder of the turnstile gathers tokens, so two acquirers can never
each hold half of what the other needs.  Holders never wait for anything, so
the waiting always ends.
"""

from __future__ import annotations

import fcntl
import os
import struct
import tempfile
import time
import weakref
from dataclasses import dataclass, field

from shoal.settings import SEMAPHORE_PATH

_TURNSTILE = 0
_POLL_START_S = 0.0001
_POLL_MAX_S = 0.001
# struct flock on Linux: short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid
_FLOCK = struct.Struct("hhqqi4x")

_open_grants: weakref.WeakSet[Grant] = weakref.WeakSet()


def default_path() -> str:
    """The semaphore file: ``SHOAL_SEMAPHORE_PATH``, else one per user in /dev/shm."""
    configured = SEMAPHORE_PATH.value()
    if configured:
        return configured
    directory = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    return os.path.join(directory, f"shoal-threads-{os.getuid()}.tokens")


def _lock_request(lock_type: int, byte: int) -> bytes:
    return _FLOCK.pack(lock_type, os.SEEK_SET, byte, 1, 0)


def _try_lock(fd: int, byte: int) -> bool:
    try:
        fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _lock_request(fcntl.F_WRLCK, byte))
    except (BlockingIOError, PermissionError):
        return False
    return True


def _unlock(fd: int, byte: int) -> None:
    fcntl.fcntl(fd, fcntl.F_OFD_SETLK, _lock_request(fcntl.F_UNLCK, byte))


def _is_locked_by_others(fd: int, byte: int) -> bool:
    answer = fcntl.fcntl(fd, fcntl.F_OFD_GETLK, _lock_request(fcntl.F_WRLCK, byte))
    return _FLOCK.unpack(answer)[0] != fcntl.F_UNLCK


@dataclass(eq=False)
class Grant:
    """Tokens held through one open descriptor; closing it gives them all back."""

    fd: int
    tokens: list[int] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.tokens)

    def release(self) -> None:
        """Give the tokens back (closing the descriptor drops every lock on it)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
            self.tokens = []


def _forget_grants_in_child() -> None:
    # A forked child shares the parent's open files; the tokens stay the parent's.
    for grant in list(_open_grants):
        if grant.fd >= 0:
            os.close(grant.fd)
            grant.fd = -1


os.register_at_fork(after_in_child=_forget_grants_in_child)


class NodeSemaphore:
    """``size`` tokens shared by every process on the node that opens ``path``."""

    def __init__(self, size: int, path: str | None = None) -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise ValueError(f"semaphore size must be a positive integer, got {size!r}")
        self.size = size
        self.path = path or default_path()

    def _open(self) -> int:
        return os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)

    def acquire(self, count: int, timeout: float | None = None) -> Grant:
        """Take ``count`` tokens (at most ``size``), waiting until they are free.

        Raises TimeoutError if ``timeout`` seconds pass first; nothing is held then.
        """
        if isinstance(count, bool) or not isinstance(count, int) or count < 1:
            raise ValueError(f"token count must be a positive integer, got {count!r}")
        count = min(count, self.size)
        deadline = None if timeout is None else time.monotonic() + timeout
        grant = Grant(self._open())
        _open_grants.add(grant)
        try:
            self._enter_turnstile(grant.fd, deadline)
            try:
                self._gather(grant, count, deadline)
            finally:
                _unlock(grant.fd, _TURNSTILE)
        except BaseException:
            grant.release()
            raise
        return grant

    def _enter_turnstile(self, fd: int, deadline: float | None) -> None:
        if deadline is None:
            fcntl.fcntl(fd, fcntl.F_OFD_SETLKW, _lock_request(fcntl.F_WRLCK, _TURNSTILE))
            return
        self._wait_for(lambda: _try_lock(fd, _TURNSTILE), deadline)

    def _gather(self, grant: Grant, count: int, deadline: float | None) -> None:
        def take_free_tokens() -> bool:
            for token in range(1, self.size + 1):
                if len(grant.tokens) == count:
                    break
                if token not in grant.tokens and _try_lock(grant.fd, token):
                    grant.tokens.append(token)
            return len(grant.tokens) == count

        self._wait_for(take_free_tokens, deadline)

    @staticmethod
    def _wait_for(done, deadline: float | None) -> None:
        pause = _POLL_START_S
        while not done():
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError("timed out waiting for node-wide thread tokens")
            time.sleep(pause)
            pause = min(pause * 2, _POLL_MAX_S)

    def tokens_in_use(self) -> int:
        """How many tokens some holder (another descriptor) has now."""
        if not os.path.exists(self.path):
            return 0
        fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
        try:
            return sum(_is_locked_by_others(fd, token) for token in range(1, self.size + 1))
        finally:
            os.close(fd)


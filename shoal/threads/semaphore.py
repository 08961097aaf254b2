"""A node-wide counting semaphore that a killed process cannot leave taken.

One small file holds one lock byte per token plus a turnstile byte.  Tokens are
open-file-description (OFD) write locks on those bytes: the kernel drops them
when the last descriptor of the holder closes, which includes any death, even
SIGKILL.  OFD locks belong to an open file, not to a process, so threads of one
process compete like processes do.

Only the holder of the turnstile gathers tokens, so two acquirers can never
each hold half of what the other needs.  Holders never wait for anything, so
the waiting always ends.

Any process that can open the file can hold its bytes, so it lives in a
directory of this user's with mode 0700 (``/dev/shm/shoal-threads-<uid>/``), is opened
without following a link and is used only if ``fstat`` shows a regular file of
this user that nobody else may read or write (a configured
``SHOAL_SEMAPHORE_PATH`` too).  Where that does not hold (another user made the
directory or the file first), the semaphore warns once and counts the threads
of this process only, through a file of its own without a name (``memfd``).
"""

from __future__ import annotations

import fcntl
import os
import stat
import struct
import tempfile
import threading
import time
import warnings
import weakref
from dataclasses import dataclass, field
from pathlib import Path

from shoal.errors import ShoalUnsafeFileWarning
from shoal.private_files import UnsafePathError, open_owned, unsafe_reason
from shoal.settings import SEMAPHORE_PATH

_TURNSTILE = 0
_POLL_START_S = 0.0001
_POLL_MAX_S = 0.001
# struct flock on Linux: short l_type, short l_whence, off_t l_start, off_t l_len, pid_t l_pid
_FLOCK = struct.Struct("hhqqi4x")

TOKENS_FILE = "tokens"

_open_grants: weakref.WeakSet[Grant] = weakref.WeakSet()
_private_files: dict[str, int] = {}  # refused path -> this process's nameless stand-in (memfd)
_private_lock = threading.Lock()


def default_path() -> str:
    """The semaphore file: ``SHOAL_SEMAPHORE_PATH``, else one per user in a 0700 directory of
    /dev/shm."""
    configured = SEMAPHORE_PATH.value()
    return configured if configured else per_user_path()


def per_user_path() -> str:
    """The semaphore file of this user when none is configured."""
    directory = "/dev/shm" if os.path.isdir("/dev/shm") else tempfile.gettempdir()
    return os.path.join(directory, f"shoal-threads-{os.geteuid()}", TOKENS_FILE)


def open_token_file(path: str) -> int:
    """A new descriptor (its own open file description) of the semaphore file ``path``.

    The default file's directory is made (mode 0700) if missing; the directory must be this
    user's and writable by nobody else, the file is not followed if it is a link and must be a
    regular file of this user that nobody else may read or write. Otherwise (or if it cannot be
    made) one :class:`~shoal.errors.ShoalUnsafeFileWarning` per path, and a descriptor of a
    nameless file of this process: its regions still take turns, those of others do not.
    """
    with _private_lock:
        private = _private_files.get(path)
    if private is None:
        try:
            return _open_checked(path)
        except OSError as error:
            private = _stand_in(path, error)
    return os.open(f"/proc/self/fd/{private}", os.O_RDWR | os.O_CLOEXEC)


def _open_checked(path: str) -> int:
    """The file at ``path``, created if missing, where its directory and it pass the checks."""
    directory = os.path.dirname(path) or "."
    per_user = path == per_user_path()
    if per_user:
        try:
            os.mkdir(directory, 0o700)
        except FileExistsError:
            pass  # ours from an earlier run, or made by someone else: the checks below tell
    folder = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        status = os.fstat(folder)
        if per_user:
            reason = unsafe_reason(status)
        elif status.st_uid in (0, os.geteuid()) and (not status.st_mode & 0o022 or status.st_mode & stat.S_ISVTX):
            reason = None  # a configured file's directory: the file itself is checked below
        else:
            reason = f"it belongs to uid {status.st_uid} and others may write in it"
        if reason is not None:
            raise UnsafePathError(f"{directory} is not safe to use: {reason}")
        return open_owned(os.path.basename(path), os.O_RDWR | os.O_CREAT, private=True, dir_fd=folder)
    finally:
        os.close(folder)


def _stand_in(path: str, error: OSError) -> int:
    """This process's nameless file for ``path``, made (with the warning) on first use."""
    with _private_lock:
        private = _private_files.get(path)
        if private is None:
            private = os.memfd_create("shoal-threads-tokens", os.MFD_CLOEXEC)
            _private_files[path] = private
            warnings.warn(
                f"Shoal does not use the thread-token file {path}: {error}. Parallel regions of this process "
                "take turns among themselves only; remove it if it is yours, or set SHOAL_SEMAPHORE_PATH "
                "to a file in a directory only you can write.",
                ShoalUnsafeFileWarning,
                stacklevel=4,
            )
    return private


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
        return open_token_file(self.path)

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
        with _private_lock:
            private = self.path in _private_files
        if not private and not Path(self.path).exists():
            return 0
        fd = self._open()
        try:
            return sum(_is_locked_by_others(fd, token) for token in range(1, self.size + 1))
        finally:
            os.close(fd)


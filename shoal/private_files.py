"""Files and directories that only this user (or root) can have written.

Shoal keeps compiled kernels, their records and its thread tokens in files that a later run
trusts: it loads the kernels as machine code and waits on the tokens. On a machine shared with
other users such a file is used only if nobody else could have put it there or changed it:

* a directory is used only if it belongs to this user (the effective uid) and no group or other
  user may write in it, and every directory above it belongs to this user or root and is
  writable by nobody else unless it is sticky (``/tmp``, ``/dev/shm``: there only an entry's
  owner may rename or remove it);
* a file is opened without following a symbolic link (``O_NOFOLLOW``), and used only if what was
  opened (``fstat`` of the descriptor, not of the name) is a regular file of this user that no
  group or other user may write (or, with ``private``, read or write);
* files are written under a temporary name created with ``O_EXCL`` and mode 0600, then renamed
  over the old one, and directories are created with mode 0700.
"""

from __future__ import annotations

import errno
import os
import stat
import threading
from pathlib import Path

_OPEN_FLAGS = os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # a planted FIFO must not block open


class UnsafePathError(PermissionError):
    """A file or directory that another user could have written, or a symbolic link."""


def unsafe_reason(status: os.stat_result, private: bool = False) -> str | None:
    """Why a file or directory with ``status`` is not safe to trust; None if it is."""
    if status.st_uid != os.geteuid():
        return f"it belongs to uid {status.st_uid}, not to uid {os.geteuid()}"
    forbidden = 0o077 if private else 0o022
    if status.st_mode & forbidden:
        return f"its mode {stat.S_IMODE(status.st_mode):04o} lets other users {'use' if private else 'write'} it"
    return None


def open_owned(path: Path | str, flags: int = os.O_RDONLY, *, private: bool = False, dir_fd: int | None = None) -> int:
    """A descriptor of the regular file ``path``, opened without following a link, that
    belongs to this user and that no other user may write (with ``private``: nor read).
    With ``os.O_CREAT`` in ``flags`` a missing file is created with mode 0600.

    Raises ``FileNotFoundError`` if it does not exist and :class:`UnsafePathError` if it is a
    link or not safe to trust (the descriptor is closed then).
    """
    try:
        descriptor = os.open(path, flags | _OPEN_FLAGS, 0o600, dir_fd=dir_fd)
    except OSError as error:
        if error.errno == errno.ELOOP or _is_link(path, dir_fd):  # EACCES on some kernels
            raise UnsafePathError(f"{path} is a symbolic link") from None
        raise
    try:
        status = os.fstat(descriptor)
        reason = "it is not a regular file" if not stat.S_ISREG(status.st_mode) else unsafe_reason(status, private)
        if reason is not None:
            raise UnsafePathError(f"{path} is not safe to use: {reason}")
        os.set_blocking(descriptor, True)
    except BaseException:
        os.close(descriptor)
        raise
    return descriptor


def _is_link(path: Path | str, dir_fd: int | None) -> bool:
    try:
        return stat.S_ISLNK(os.lstat(path, dir_fd=dir_fd).st_mode)
    except OSError:
        return False


def read_owned(path: Path) -> bytes | None:
    """The content of ``path`` if it exists and is safe to trust (:func:`open_owned`), else None."""
    try:
        descriptor = open_owned(path)
    except OSError:
        return None
    try:
        with os.fdopen(descriptor, "rb", closefd=False) as stream:
            return stream.read()
    except OSError:
        return None
    finally:
        os.close(descriptor)


def write_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` (mode 0600) through a temporary file renamed over it, so a
    concurrent reader sees the old or the new content; raises ``OSError`` (and leaves no
    temporary file) where it cannot be written."""
    temporary = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        temporary.unlink()  # left by a killed writer of this thread id: ours (the directory is)
        descriptor = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        with os.fdopen(descriptor, "wb") as stream:
            stream.write(data)
        os.replace(temporary, path)
    except OSError:
        temporary.unlink(missing_ok=True)
        raise


def private_directory(path: Path) -> Path:
    """``path`` as a directory only this user can write, created (mode 0700, with its missing
    parents) if needed; returns its resolved path, which callers use from then on so that no
    link along ``path`` can be swapped later. Raises :class:`UnsafePathError` naming the
    directory and the reason if it, or a directory above it, is not safe to trust, and
    ``OSError`` if it cannot be created."""
    path = Path(os.path.abspath(path))
    missing = []
    for candidate in (path, *path.parents):
        if candidate.exists():
            break
        missing.append(candidate)
    for candidate in reversed(missing):
        try:
            os.mkdir(candidate, 0o700)
        except FileExistsError:
            pass  # made meanwhile, by us or not: checked below
    resolved = Path(os.path.realpath(path))
    status = os.stat(resolved)
    if not stat.S_ISDIR(status.st_mode):
        raise UnsafePathError(f"{resolved} is not a directory")
    reason = unsafe_reason(status)
    if reason is not None:
        raise UnsafePathError(f"{resolved} is not safe to use: {reason}")
    for parent in resolved.parents:
        above = os.stat(parent)
        if above.st_uid not in (0, os.geteuid()):
            raise UnsafePathError(f"{parent} (above {resolved}) belongs to uid {above.st_uid}")
        if above.st_mode & 0o022 and not above.st_mode & stat.S_ISVTX:
            raise UnsafePathError(f"other users may write in {parent} (above {resolved}), mode {stat.S_IMODE(above.st_mode):04o}")
    return resolved

"""Claims on kernels being compiled, so that two compilers never compile the same kernel at once.

A compiler claims kernel module ``shoal_kernel_KEY.py`` by holding an exclusive ``flock`` on
``shoal_kernel_KEY.claim`` next to it, and releases the claim by removing the file and then
closing it. The operating system drops the lock when its holder dies, however it dies, so a
claim file whose lock can be taken is stale: whoever takes it owns it and removes it when done,
and :func:`remove_stale` removes the ones nobody is waiting for. A claim whose file was removed
or replaced while its taker waited for the lock is not the file's claim any more, and is taken
again.

A claim file is opened without following a link and used only if it belongs to this user and
nobody else may read or write it (a lock taken through another user's file could hold a compiler
forever); one that is not is removed and made again (the cache directory is this user's).
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass
from pathlib import Path

from shoal.private_files import UnsafePathError, open_owned

CLAIM_SUFFIX = ".claim"
UNSAFE_RETRIES = 100  # a claim file found unsafe again after this many removals: give up


@dataclass
class Claim:
    """An exclusive claim on one kernel, held through an open, locked file."""

    path: Path
    descriptor: int

    def release(self) -> None:
        """Remove the claim file, then drop the lock (idempotent)."""
        if self.descriptor < 0:
            return
        self.path.unlink(missing_ok=True)
        os.close(self.descriptor)
        self.descriptor = -1


def claim_path(module: Path) -> Path:
    """The claim file of the kernel module at ``module``."""
    return module.with_suffix(CLAIM_SUFFIX)


def try_claim(path: Path, create: bool = True) -> Claim | None:
    """Claim ``path`` if no living process holds it; None if one does (or, with ``create``
    false, if there is no such file)."""
    return _claim(path, create, wait=False)


def claim(path: Path) -> Claim:
    """Claim ``path``, waiting while another process holds it (with the file open, so that
    a waiting compiler can be told by its open files)."""
    taken = _claim(path, create=True, wait=True)
    assert taken is not None
    return taken


def _claim(path: Path, create: bool, wait: bool) -> Claim | None:
    for _ in range(UNSAFE_RETRIES):
        try:
            descriptor = open_owned(path, os.O_RDWR | (os.O_CREAT if create else 0), private=True)
        except FileNotFoundError:
            return None
        except UnsafePathError:
            path.unlink(missing_ok=True)  # not a claim of ours: gone, and ours made instead
            if not create:
                return None
            continue
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(descriptor)
            return None
        except BaseException:
            os.close(descriptor)
            raise
        if _is_file_at(descriptor, path):
            os.ftruncate(descriptor, 0)
            os.write(descriptor, f"{os.getpid()}\n".encode())
            return Claim(path, descriptor)
        os.close(descriptor)  # released (removed) or replaced while we took the lock: again
        if not create:
            return None
    raise UnsafePathError(f"{path} is replaced by an unsafe file again and again")


def remove_stale(directory: Path) -> int:
    """Remove the claim files in ``directory`` that no living process holds; how many."""
    removed = 0
    for path in directory.glob(f"*{CLAIM_SUFFIX}"):
        stale = try_claim(path, create=False)
        if stale is not None:
            stale.release()
            removed += 1
    return removed


def _is_file_at(descriptor: int, path: Path) -> bool:
    try:
        found = os.stat(path)
    except FileNotFoundError:
        return False
    held = os.fstat(descriptor)
    return (held.st_dev, held.st_ino) == (found.st_dev, found.st_ino)

"""The kernel cache's directory and files, used only where no other user could have written them.

The cache holds what a later run executes: kernel modules that it imports, Numba's machine code
next to them and shared libraries that it loads (``native.py``). So the directory is created
with mode 0700 and used only if it belongs to this user and nobody else may write in it or in a
directory above it (``shoal.private_files``); otherwise the run warns once
(:class:`~shoal.errors.ShoalUnsafeFileWarning`) and compiles its kernels in memory, caching
nothing. Files are written with mode 0600 under a temporary name renamed over the old one, so a
concurrent reader sees the old or the new text, and read only if they belong to this user.
"""

from __future__ import annotations

import threading
import warnings
from pathlib import Path

from shoal.errors import ShoalUnsafeFileWarning
from shoal.private_files import UnsafePathError, private_directory, read_owned, write_atomically

_verified: dict[Path, tuple[Path, int, int]] = {}  # configured -> resolved, its device and inode
_refused: set[Path] = set()  # directories refused (and warned about): not looked at again
_lock = threading.Lock()


def verified_directory(configured: Path) -> Path | None:
    """``configured`` (created if missing) as a resolved path if it is safe to keep kernels
    in, else None after one warning per directory and process (and None, silently, where it
    cannot be created: then nothing is cached either). A directory checked before is checked
    again only if it was replaced (one ``stat``)."""
    with _lock:
        if configured in _refused:
            return None
        known = _verified.get(configured)
    if known is not None:
        resolved, device, inode = known
        try:
            status = resolved.stat()
            if (status.st_dev, status.st_ino) == (device, inode):
                return resolved
        except OSError:
            pass
    try:
        resolved = private_directory(configured)
        private_directory(resolved / "__pycache__")  # Numba's machine code, Python's bytecode
    except UnsafePathError as error:
        with _lock:
            _refused.add(configured)
        warnings.warn(
            f"Shoal does not use the kernel cache: {error}. Kernels are compiled in memory "
            "and not cached; make the directory yours and not writable by others (chmod 700) or set "
            "SHOAL_CACHE_DIR to one that is.",
            ShoalUnsafeFileWarning,
            stacklevel=2,
        )
        return None
    except OSError:
        return None
    try:
        status = resolved.stat()
    except OSError:
        return None
    with _lock:
        _verified[configured] = (resolved, status.st_dev, status.st_ino)
    return resolved


def read_text(path: Path) -> str | None:
    """The text of ``path`` if it exists and belongs to this user with safe modes, else None."""
    data = read_owned(path)
    if data is None:
        return None
    try:
        return data.decode()
    except UnicodeDecodeError:
        return None


def write_text_atomically(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` (mode 0600) through a temporary file renamed over it; raises
    ``OSError`` (and leaves no temporary file) where it cannot be written."""
    write_atomically(path, text.encode())

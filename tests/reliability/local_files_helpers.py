"""Another user on the same machine, for the tests of files Shoal trusts: files given to uid 65534
(nobody), a process of that user holding a lock, and a shared library whose constructor leaves a
marker file when it is loaded (so a test can tell that the library's code ran)."""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import shutil
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from shoal.engine.node.compile import native

OTHER_UID = 65534  # nobody
MARKER_VARIABLE = "SHOAL_TEST_PLANTED_MARKER"
TAG = b"GOODTAG1"  # written into the marker by the library's constructor
_FLOCK = struct.Struct("hhqqi4x")  # struct flock on Linux (as in shoal/threads/semaphore.py)

LIBRARY_SOURCE = r"""
#include <stdio.h>
#include <stdlib.h>
static const char tag[] = "GOODTAG1";
__attribute__((constructor)) static void planted(void) {
    const char *marker = getenv("SHOAL_TEST_PLANTED_MARKER");
    if (marker != NULL) {
        FILE *out = fopen(marker, "a");
        if (out != NULL) { fputs(tag, out); fputc('\n', out); fclose(out); }
    }
}
int entry(long long n) { return (int)(n * 0); }
"""


def needs_root() -> None:
    """Skip unless this process can act as another user (tests run as root in CI)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to make files of another user (uid 65534) and run a process as that user")


def give_to_other_user(*paths: Path) -> None:
    """Make ``paths`` belong to the other user (links themselves, not what they point to)."""
    for path in paths:
        os.chown(path, OTHER_UID, OTHER_UID, follow_symlinks=False)


@contextlib.contextmanager
def lock_held_by_other_user(path: Path, byte: int = 0, whole_file: bool = False) -> Iterator[int]:
    """A child process running as the other user holds an OFD write lock on ``byte`` of
    ``path`` (with ``whole_file``: an exclusive ``flock``, as compile claims take) until the
    block ends; yields its pid."""
    ready_read, ready_write = os.pipe()
    release_read, release_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        status = 1
        try:
            os.close(ready_read)
            os.close(release_write)
            descriptor = os.open(path, os.O_RDWR)
            os.setgroups([])
            os.setgid(OTHER_UID)
            os.setuid(OTHER_UID)
            if whole_file:
                fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
            else:
                fcntl.fcntl(descriptor, fcntl.F_OFD_SETLK, _FLOCK.pack(fcntl.F_WRLCK, os.SEEK_SET, byte, 1, 0))
            os.write(ready_write, b"1")
            os.read(release_read, 1)
            status = 0
        finally:
            os._exit(status)
    os.close(ready_write)
    os.close(release_read)
    try:
        assert os.read(ready_read, 1) == b"1", "the other user's process could not take its lock"
        yield pid
    finally:
        os.close(release_write)
        os.close(ready_read)
        os.waitpid(pid, 0)


def shared_sticky_directory(path: Path) -> Path:
    """A directory like /dev/shm or /tmp: everyone may write, only an entry's owner remove it."""
    path.mkdir()
    os.chmod(path, 0o1777)
    return path


def build_marker_library(directory: Path) -> bytes:
    """The content of a shared library whose constructor appends :data:`TAG` to the file named
    by ``$SHOAL_TEST_PLANTED_MARKER``; skips the test without a C compiler."""
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        pytest.skip("needs a C compiler (cc) to build a library whose constructor shows it ran")
    source = directory / "planted.c"
    source.write_text(LIBRARY_SOURCE)
    library = directory / "planted.so"
    subprocess.run([compiler, "-shared", "-fPIC", "-o", str(library), str(source)], check=True, capture_output=True)
    content = library.read_bytes()
    assert content.count(TAG) == 1
    return content


def record(content: bytes, **changes: object) -> dict:
    """The record ``native.build`` writes next to a library of ``content`` (symbol ``entry``)."""
    description = {"format": native.LIBRARY_FORMAT, "host": native.host_fingerprint(), "symbol": "entry",
                   "params": ["q"], "results": [], "size": len(content),
                   "sha256": hashlib.sha256(content).hexdigest()}  # fmt: skip
    description.update(changes)
    return description


def plant(library: Path, content: bytes, description: dict) -> None:
    """Write ``content`` at ``library`` and ``description`` as its record (mode 0600)."""
    library.parent.mkdir(parents=True, exist_ok=True)
    library.write_bytes(content)
    library.with_suffix(".json").write_text(json.dumps(description))
    os.chmod(library, 0o600)
    os.chmod(library.with_suffix(".json"), 0o600)


def marker_written(marker: Path) -> bool:
    """True if a library's constructor ran (it wrote the marker)."""
    return marker.exists() and marker.read_bytes() != b""

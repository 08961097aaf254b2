"""System-wide shared memory for recurrently read arrays (paper 001 §III-A3, §III-B).

Segments live in ``/dev/shm`` (what ``shm_open`` maps to on Linux) and are named
``shoal-<job>-<data id>-v<version>-<random>``. Files are opened directly instead of through
``multiprocessing.shared_memory`` so that Python's resource tracker never registers them
and never unlinks a segment another process still expects.

/dev/shm is shared by every user of the machine, so nothing found there is trusted: names
carry 64 random bits (another user who lists /dev/shm cannot guess the next one), segments
are created only with ``O_EXCL`` (a name that exists is an error, never attached), and
whoever maps a segment first checks with ``fstat`` that this user owns it and that no one
else may write it.

Layout: a 64-byte header whose first 8 bytes hold a ready flag, then the array bytes. The
creator writes the flag last; a reader that finds the flag missing waits for it.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import re
import secrets
import stat
import struct
import time
from dataclasses import dataclass

import numpy as np

from shoal.system import pid_alive

SHM_DIR = "/dev/shm"
PREFIX = "shoal-"
HEADER_BYTES = 64
READY = 0x5944_4145_524C_4153  # arbitrary non-zero marker
_FLAG = struct.Struct("<Q")
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)
#: Space left free in /dev/shm when deciding whether a segment fits.
RESERVE_BYTES = 64 * 1024 * 1024


class SegmentNotReady(RuntimeError):
    """A segment exists but its creator never finished filling it."""


class SegmentExistsError(FileExistsError):
    """A segment of the name the runtime chose already exists: someone else made it."""


class UntrustedSegmentError(PermissionError):
    """A segment is owned by another user, or others may write it: it is never mapped."""


@dataclass(frozen=True)
class SegmentRef:
    """What a worker needs to map an array placed in shared memory."""

    name: str
    dtype: str
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return int(np.dtype(self.dtype).itemsize * int(np.prod(self.shape, dtype=np.int64)))


def new_job_name() -> str:
    """A name unique to this process: ``<pid>.<64 random bits in hex>`` (no dashes)."""
    return f"{os.getpid()}.{secrets.token_hex(8)}"


def segment_name(job: str, data_id: int, version: int) -> str:
    """A fresh, unguessable segment name for one version of one datum."""
    return f"{PREFIX}{job}-{data_id}-v{version}-{secrets.token_hex(8)}"


def _path(name: str) -> str:
    return os.path.join(SHM_DIR, name)


def free_bytes() -> int:
    """Bytes still available in /dev/shm."""
    stats = os.statvfs(SHM_DIR)
    return stats.f_bavail * stats.f_frsize


def fits(nbytes: int) -> bool:
    """Whether a segment of ``nbytes`` fits in /dev/shm, keeping a reserve."""
    try:
        return nbytes + HEADER_BYTES + RESERVE_BYTES <= free_bytes()
    except OSError:
        return False


def _view(buffer: mmap.mmap, ref: SegmentRef) -> np.ndarray:
    return np.ndarray(ref.shape, dtype=np.dtype(ref.dtype), buffer=buffer, offset=HEADER_BYTES)


def create(name: str, array: np.ndarray) -> SegmentRef:
    """Place ``array`` in a new segment ``name``; return its ref.

    Raises :class:`SegmentExistsError` if the name exists (it is never attached) and
    ``OSError`` when the data cannot be written (then nothing is left behind).
    """
    if array.dtype.hasobject:
        raise TypeError(f"arrays of dtype {array.dtype} cannot be placed in shared memory")
    ref = SegmentRef(name, array.dtype.str, tuple(array.shape))
    size = HEADER_BYTES + max(ref.nbytes, 1)
    try:
        fd = os.open(_path(name), os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    except FileExistsError:
        raise SegmentExistsError(
            f"shared-memory segment {_path(name)} already exists ({_describe_owner(name)}); "
            f"a segment this runtime did not create is never attached"
        ) from None
    try:
        os.ftruncate(fd, size)
        # write() into tmpfs, not a copy through a fresh mapping: no page fault per 4 KiB.
        data = memoryview(np.ascontiguousarray(array).reshape(-1).view(np.uint8))
        written = 0
        while written < len(data):
            written += os.pwrite(fd, data[written:], HEADER_BYTES + written)
        os.pwrite(fd, _FLAG.pack(READY), 0)  # last: readers wait for it
    except BaseException:
        unlink(name)
        raise
    finally:
        os.close(fd)
    return ref


def _describe_owner(name: str) -> str:
    try:
        info = os.lstat(_path(name))
    except OSError:
        return "its owner is unknown"
    return f"owned by uid {info.st_uid}, mode {stat.filemode(info.st_mode)}"


def check_trusted(fd: int, name: str) -> os.stat_result:
    """``fstat`` an open segment: a regular file of this user that only this user may write."""
    info = os.fstat(fd)
    uid = os.geteuid()
    if not stat.S_ISREG(info.st_mode):
        raise UntrustedSegmentError(f"refusing to map shared-memory segment {name}: not a regular file")
    if info.st_uid != uid:
        raise UntrustedSegmentError(
            f"refusing to map shared-memory segment {name}: it is owned by uid {info.st_uid}, "
            f"not by this user (uid {uid})"
        )
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UntrustedSegmentError(
            f"refusing to map shared-memory segment {name}: other users may write it "
            f"(mode {stat.filemode(info.st_mode)})"
        )
    return info


def attach(ref: SegmentRef, timeout: float = 30.0, private: bool = False) -> np.ndarray:
    """Map a segment and return a zero-copy view.

    Read-only (``writeable=False``) by default; ``private`` maps it copy-on-write instead:
    a writable view whose writes stay in this process, like an array received by value.
    """
    size = HEADER_BYTES + max(ref.nbytes, 1)
    deadline = time.monotonic() + timeout
    fd = os.open(_path(ref.name), os.O_RDONLY | os.O_NOFOLLOW)
    try:
        check_trusted(fd, ref.name)
        while os.fstat(fd).st_size < size:
            if time.monotonic() > deadline:
                raise SegmentNotReady(f"shared-memory segment {ref.name} was never sized")
            time.sleep(0.001)
        if private:
            buffer = mmap.mmap(fd, size, access=mmap.ACCESS_COPY)
        else:  # populated in one call instead of one page fault per few pages
            buffer = mmap.mmap(fd, size, flags=mmap.MAP_SHARED | _POPULATE, prot=mmap.PROT_READ)
    finally:
        os.close(fd)
    while _FLAG.unpack_from(buffer, 0)[0] != READY:
        if time.monotonic() > deadline:
            buffer.close()
            raise SegmentNotReady(f"shared-memory segment {ref.name} was never filled")
        time.sleep(0.001)
    view = _view(buffer, ref)
    assert view.flags.writeable == private
    return view


def holds(ref: SegmentRef, array: np.ndarray) -> bool:
    """Whether the segment holds exactly ``array`` (same dtype, shape and bytes)."""
    if np.dtype(ref.dtype) != array.dtype or ref.shape != array.shape:
        return False
    stored = _words(attach(ref))
    given = _words(np.ascontiguousarray(array))
    step = 1 << 16  # compare in cache-sized blocks: no array-sized temporary
    return all(np.array_equal(stored[i : i + step], given[i : i + step]) for i in range(0, len(given), step))


def _words(array: np.ndarray) -> np.ndarray:
    flat = array.reshape(-1).view(np.uint8)
    return flat.view(np.uint64) if len(flat) % 8 == 0 else flat


def unlink(name: str) -> None:
    """Remove a segment's name; mappings that exist stay valid until dropped."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(_path(name))


def list_segments(prefix: str = PREFIX) -> list[str]:
    """Names in /dev/shm that start with ``prefix``."""
    try:
        return sorted(name for name in os.listdir(SHM_DIR) if name.startswith(prefix))
    except FileNotFoundError:
        return []


_TASK_SEGMENT = re.compile(rf"^{PREFIX}\d+\.[0-9a-f]+-")


def task_segments() -> list[str]:
    """Segments of task runtimes (of any process) in /dev/shm."""
    return [name for name in list_segments() if _TASK_SEGMENT.match(name)]


def segment_owner(name: str) -> int:
    """The pid of the process whose task runtime created the segment ``name``."""
    return int(name[len(PREFIX) :].split(".", 1)[0])


def _mine(name: str) -> bool:
    """Whether this user owns ``name`` in /dev/shm: others' files are never removed."""
    try:
        return os.lstat(_path(name)).st_uid == os.geteuid()
    except OSError:
        return False


def sweep(job: str) -> int:
    """Unlink every segment of ``job`` this user owns; returns how many were removed."""
    names = [name for name in list_segments(f"{PREFIX}{job}-") if _mine(name)]
    for name in names:
        unlink(name)
    return len(names)


def sweep_dead_jobs() -> int:
    """Unlink this user's task segments whose owning process no longer exists."""
    removed = 0
    for name in list_segments():
        job = name[len(PREFIX) :].split("-", 1)[0]
        pid_text = job.split(".", 1)[0]
        if "." in job and pid_text.isdigit() and not pid_alive(int(pid_text)) and _mine(name):
            unlink(name)
            removed += 1
    return removed

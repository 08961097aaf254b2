"""Messages between the main process and task workers, framed with pickle protocol 5.

Large buffers (NumPy arrays) travel out of band: one header frame with the pickle stream
and the buffer sizes, then one frame per buffer, received straight into writable memory.
"""

from __future__ import annotations

import pickle
import struct
from dataclasses import dataclass, field
from multiprocessing.connection import Connection

import numpy as np

from shoal.tasks.shm import SegmentRef

Key = tuple[int, int]  # (data id, version)
_COUNT = struct.Struct("<I")


@dataclass(frozen=True)
class ValueArg:
    """An argument sent by value."""

    value: object


@dataclass(frozen=True)
class CachedArg:
    """An argument the worker already holds; ``take`` hands it over for writing."""

    key: Key
    take: bool


@dataclass(frozen=True)
class SharedArg:
    """An argument placed in shared memory, read through a zero-copy read-only view."""

    ref: SegmentRef


Arg = ValueArg | CachedArg | SharedArg


@dataclass
class TaskMessage:
    """Run ``module.qualname(*args, **kwargs)`` and send back the written values."""

    task_id: int
    module: str
    qualname: str
    args: list[Arg]
    kwargs: dict[str, Arg]
    written: list[int | str]  # positions or names of INOUT/OUT arguments
    output_keys: list[Key]  # keys of written arguments, then of return values
    returns: int
    drops: list[Key] = field(default_factory=list)
    dropped_segments: list[str] = field(default_factory=list)


@dataclass
class DropMessage:
    """Forget cached values and shared-memory mappings."""

    drops: list[Key]
    dropped_segments: list[str]


@dataclass
class DoneMessage:
    """A task finished; ``outputs`` follow ``TaskMessage.output_keys``."""

    task_id: int
    outputs: list[object]


@dataclass
class FailedMessage:
    """A task raised. ``exception`` is None when the exception itself could not be pickled."""

    task_id: int
    exception: BaseException | None
    description: str
    traceback: str
    worker: str


def send(connection: Connection, message: object) -> None:
    """Send one message; array buffers go out of band."""
    buffers: list[pickle.PickleBuffer] = []
    stream = pickle.dumps(message, protocol=5, buffer_callback=buffers.append)
    raws = [buffer.raw() for buffer in buffers]
    sizes = struct.pack(f"<{len(raws)}Q", *(raw.nbytes for raw in raws))
    connection.send_bytes(_COUNT.pack(len(raws)) + sizes + stream)
    for raw in raws:
        connection.send_bytes(raw)


def receive(connection: Connection) -> object:
    """Receive one message sent by :func:`send`; out-of-band buffers arrive writable."""
    frame = connection.recv_bytes()
    (count,) = _COUNT.unpack_from(frame, 0)
    sizes = struct.unpack_from(f"<{count}Q", frame, _COUNT.size)
    stream = memoryview(frame)[_COUNT.size + 8 * count :]
    buffers = []
    for size in sizes:
        buffer = np.empty(size, dtype=np.uint8)
        received = connection.recv_bytes_into(buffer)
        if received != size:
            raise EOFError(f"expected a buffer of {size} bytes, got {received}")
        buffers.append(buffer)
    return pickle.loads(stream, buffers=buffers)

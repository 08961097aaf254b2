"""Messages between the main process and task workers, framed with pickle protocol 5.

Messages travel in batches: one frame holds a list of every message queued at send time,
so a burst of small tasks costs one pickle and one write instead of one each. Large
buffers (NumPy arrays) travel out of band: one header frame with the pickle stream and the
buffer sizes, then one frame per buffer, received straight into writable memory.
"""

from __future__ import annotations

import os
import pickle
import struct
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing.connection import Connection

import numpy as np

from shoal.tasks.shm import SegmentRef

Key = tuple[int, int]  # (data id, version)
# Every message pickles as its class and a tuple of its fields (``__reduce__``): no field
# names in the stream and no instance dictionary to rebuild.
_COUNT = struct.Struct("<I")


@dataclass(frozen=True, slots=True)
class ValueArg:
    """An argument sent by value."""

    value: object

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.value,))


@dataclass(frozen=True, slots=True)
class CachedArg:
    """An argument the worker already holds; ``take`` hands it over for writing."""

    key: Key
    take: bool

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.key, self.take))


@dataclass(frozen=True, slots=True)
class SharedArg:
    """An argument placed in shared memory, read through a zero-copy read-only view.

    ``private``: a snapshot mapped copy-on-write, a writable copy private to the task.
    """

    ref: SegmentRef
    private: bool = False

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.ref, self.private))


Arg = ValueArg | CachedArg | SharedArg


@dataclass(slots=True)
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
    short: bool = False  # expected to finish quickly: the worker may hold its reply briefly
    report_start: bool = False  # the task has a timeout: say when it starts running
    code_id: str | None = None  # digest of a function sent by value (interactive __main__)
    code: bytes | None = None  # that function's pickle, the first time this worker needs it

    def __reduce__(self) -> tuple[object, ...]:
        fields = (self.task_id, self.module, self.qualname, self.args, self.kwargs, self.written)
        rest = (self.drops, self.dropped_segments, self.short, self.report_start, self.code_id, self.code)
        return (type(self), (*fields, self.output_keys, self.returns, *rest))


@dataclass(slots=True)
class DropMessage:
    """Forget cached values and shared-memory mappings."""

    drops: list[Key]
    dropped_segments: list[str]

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.drops, self.dropped_segments))


@dataclass(slots=True)
class CancelMessage:
    """Skip these queued tasks if they have not started (no reply is expected)."""

    task_ids: list[int]

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.task_ids,))


@dataclass(slots=True)
class StartedMessage:
    """A task with a timeout started running now (its clock starts)."""

    task_id: int

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.task_id,))


@dataclass(slots=True)
class DoneMessage:
    """A task finished; ``outputs`` follow ``TaskMessage.output_keys``."""

    task_id: int
    outputs: list[object]
    seconds: float = 0.0  # how long the function ran
    started: float = 0.0  # when it began (``time.perf_counter``, the system-wide clock): the trace's task event

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.task_id, self.outputs, self.seconds, self.started))


@dataclass(slots=True)
class FailedMessage:
    """A task raised. ``exception`` is None when the exception itself could not be pickled."""

    task_id: int
    exception: BaseException | None
    description: str
    traceback: str
    worker: str

    def __reduce__(self) -> tuple[object, ...]:
        return (type(self), (self.task_id, self.exception, self.description, self.traceback, self.worker))


@dataclass(frozen=True, slots=True)
class Encoded:
    """A pickled message ready to write: the header frame, then its out-of-band buffers."""

    header: bytes
    buffers: list[memoryview]


class UndecodableError(Exception):
    """A message arrived whole but unpickling it raised; ``task_ids`` are the tasks it
    concerns (as the sender listed them outside the pickle)."""

    def __init__(self, task_ids: list[int], cause: BaseException) -> None:
        super().__init__(f"a message about tasks {task_ids} could not be unpickled: {cause!r}")
        self.task_ids = task_ids
        self.cause = cause


def encode(message: object, task_ids: Sequence[int] = (), by_value: bool = False) -> Encoded:
    """Pickle a message (or a batch, a list of them); raises if something cannot be pickled.

    ``task_ids`` travel outside the pickle, so that a receiver that cannot unpickle the
    message still knows which tasks it was about. ``by_value``: pickle with cloudpickle,
    which sends functions and classes of an interactive ``__main__`` by value.
    """
    buffers: list[pickle.PickleBuffer] = []
    dumps = pickle.dumps
    if by_value:
        import cloudpickle

        dumps = cloudpickle.dumps
    stream = dumps(message, protocol=5, buffer_callback=buffers.append)
    raws = [buffer.raw() for buffer in buffers]
    sizes = struct.pack(f"<{len(raws)}Q", *(raw.nbytes for raw in raws))
    ids = struct.pack(f"<I{len(task_ids)}q", len(task_ids), *task_ids)
    return Encoded(_COUNT.pack(len(raws)) + sizes + ids + stream, raws)


def write(connection: Connection, encoded: Encoded) -> None:
    """Write an encoded message: the header as a frame, then each buffer's raw bytes.

    Buffers go straight to the descriptor (their sizes are in the header): one copy into
    the kernel and, on the other side, one copy out into the destination array, where
    ``Connection.recv_bytes_into`` would copy each chunk twice more.
    """
    connection.send_bytes(encoded.header)
    descriptor = connection.fileno()
    for raw in encoded.buffers:
        view = raw
        while view:
            view = view[os.write(descriptor, view) :]


def send(connection: Connection, message: object) -> None:
    """Send one message (or a list of them, a batch); array buffers go out of band."""
    write(connection, encode(message))


def receive(connection: Connection) -> object:
    """Receive one message sent by :func:`send`; out-of-band buffers arrive writable."""
    frame = connection.recv_bytes()
    (count,) = _COUNT.unpack_from(frame, 0)
    sizes = struct.unpack_from(f"<{count}Q", frame, _COUNT.size)
    offset = _COUNT.size + 8 * count
    (id_count,) = _COUNT.unpack_from(frame, offset)
    offset += _COUNT.size
    task_ids = struct.unpack_from(f"<{id_count}q", frame, offset)
    stream = memoryview(frame)[offset + 8 * id_count :]
    buffers = []
    descriptor = connection.fileno()
    for size in sizes:
        buffer = np.empty(size, dtype=np.uint8)
        view = memoryview(buffer)
        while view:
            received = os.readv(descriptor, [view])
            if received == 0:
                raise EOFError(f"the connection closed inside a buffer of {size} bytes")
            view = view[received:]
        buffers.append(buffer)
    try:
        return pickle.loads(stream, buffers=buffers)
    except BaseException as error:
        raise UndecodableError(list(task_ids), error) from error

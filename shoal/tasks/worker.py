"""The task worker process: runs tasks, keeps what it produced, maps shared arrays."""

from __future__ import annotations

import contextlib
import importlib
import os
import pickle
import signal
import sys
import threading
import time
import traceback
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from multiprocessing.connection import Connection

import numpy as np

from shoal.tasks import shm, wire


def resolve_function(module_name: str, qualname: str) -> Callable[..., object]:
    """Import the function a task names; unwrap the ``@task`` wrapper."""
    module = sys.modules.get(module_name) or importlib.import_module(module_name)
    target: object = module
    for part in qualname.split("."):
        target = getattr(target, part)
    inner = getattr(target, "__shoal_task_function__", None)
    return inner if inner is not None else target  # type: ignore[return-value]


class WorkerState:
    """One worker's tables: values it produced, and the segments it has mapped."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.cache: dict[wire.Key, object] = {}
        self.segments: dict[str, np.ndarray] = {}
        self.functions: dict[tuple[str, str, str | None], Callable[..., object]] = {}
        #: A function came by value: replies may hold classes of an interactive __main__,
        #: which only cloudpickle can send back.
        self.by_value = False

    def drop(self, keys: list[wire.Key], segment_names: list[str]) -> None:
        for key in keys:
            self.cache.pop(key, None)
        for name in segment_names:
            self.segments.pop(name, None)

    def materialize(self, arg: wire.Arg) -> object:
        if isinstance(arg, wire.ValueArg):
            return arg.value
        if isinstance(arg, wire.CachedArg):
            return self.cache.pop(arg.key) if arg.take else self.cache[arg.key]
        if arg.private:
            return shm.attach(arg.ref, private=True)  # never cached: writes stay in this task
        view = self.segments.get(arg.ref.name)
        if view is None:
            view = shm.attach(arg.ref)
            self.segments[arg.ref.name] = view
        return view

    def run(
        self, message: wire.TaskMessage, on_start: Callable[[int], None] | None = None
    ) -> wire.DoneMessage | wire.FailedMessage:
        """Run one task; ``on_start(task_id)`` is called just before its function."""
        self.drop(message.drops, message.dropped_segments)
        try:
            key = (message.module, message.qualname, message.code_id)
            function = self.functions.get(key)
            if function is None:
                function = self.functions[key] = self._load(message)
                self.by_value = self.by_value or message.code_id is not None
            args = [self.materialize(arg) for arg in message.args]
            kwargs = {name: self.materialize(arg) for name, arg in message.kwargs.items()}
            if on_start is not None:
                on_start(message.task_id)
            started = time.perf_counter()
            result = function(*args, **kwargs)
            seconds = time.perf_counter() - started
            outputs = [args[w] if isinstance(w, int) else kwargs[w] for w in message.written]
            outputs.extend(_split_returns(result, message.returns, message.qualname))
        except BaseException as error:  # SystemExit and KeyboardInterrupt too: the task's error
            return self.failure(message.task_id, error)
        for key, value in zip(message.output_keys, outputs):
            self.cache[key] = value
        return wire.DoneMessage(message.task_id, outputs, seconds, started)

    @staticmethod
    def _load(message: wire.TaskMessage) -> Callable[..., object]:
        """The task's function: unpickled when sent by value, else imported."""
        if message.code_id is None:
            return resolve_function(message.module, message.qualname)
        if message.code is None:
            raise RuntimeError(f"task function {message.qualname} was to be sent by value but never arrived")
        return pickle.loads(message.code)  # cloudpickle's output; cloudpickle is installed here too

    def failure(self, task_id: int, error: BaseException) -> wire.FailedMessage:
        """The reply for a task that raised ``error`` (sent as text when it cannot be pickled)."""
        text = "".join(traceback.format_exception(error))
        try:
            pickle.dumps(error, protocol=5)
            exception: BaseException | None = error
        except BaseException:
            exception = None
        try:
            description = repr(error)
        except BaseException:
            description = f"an exception of type {type(error).__qualname__}"
        return wire.FailedMessage(task_id, exception, description, text, self.name)


def _split_returns(result: object, returns: int, qualname: str) -> list[object]:
    if returns == 0:
        return []
    if returns == 1:
        return [result]
    if not isinstance(result, tuple | list) or len(result) != returns:
        length = f" of length {len(result)}" if isinstance(result, tuple | list) else ""
        raise ValueError(
            f"task {qualname} declares returns={returns} but returned "
            f"{type(result).__name__}{length}"
        )
    return list(result)


def _limit_blas(threads: int) -> object:
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=threads)


#: Replies of short tasks are held back at most this long while more short tasks are queued.
REPLY_HOLD_SECONDS = 0.002


@dataclass(frozen=True)
class Undelivered:
    """A task whose message arrived but could not be unpickled: it fails with ``error``."""

    task_id: int
    error: BaseException


class _Inbox:
    """Messages received but not yet handled, refilled without blocking when more arrived."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection
        self.queue: deque[object] = deque()
        self.stopped = False
        self.cancelled: set[int] = set()  # queued tasks not to run

    def refill(self, block: bool) -> None:
        """Receive one batch if one is waiting (or, with ``block``, wait for it)."""
        if self.stopped or not (block or self.connection.poll(0)):
            return
        try:
            batch = wire.receive(self.connection)
        except wire.UndecodableError as error:  # an argument that cannot be unpickled here
            error.cause.add_note("raised in the worker while unpickling the task's arguments")
            self.queue.extend(Undelivered(task_id, error.cause) for task_id in error.task_ids)
            return
        if batch is None:
            self.stopped = True
            return
        for message in batch:  # type: ignore[attr-defined]
            if type(message) is wire.CancelMessage:
                self.cancelled.update(message.task_ids)
            else:
                self.queue.append(message)

    def skip(self, message: wire.TaskMessage) -> bool:
        """Whether the task was cancelled before it started (long tasks look for news first)."""
        if not message.short:
            while not self.stopped and self.connection.poll(0):
                self.refill(block=False)
        if message.task_id in self.cancelled:
            self.cancelled.discard(message.task_id)
            return True
        return False

    def next_is_short(self) -> bool:
        """Whether the next queued message is quick to handle (a short task or a drop)."""
        if not self.queue:
            self.refill(block=False)
        if not self.queue:
            return False
        head = self.queue[0]
        return isinstance(head, wire.DropMessage) or bool(getattr(head, "short", False))


def _send_replies(connection: Connection, state: WorkerState, replies: list[object]) -> None:
    """Send replies as one batch; a reply that cannot be pickled becomes its task's error."""
    try:
        payload = wire.encode(replies, [reply.task_id for reply in replies], state.by_value)  # type: ignore[attr-defined]
    except BaseException:  # whatever a result's pickling raises, nothing was written yet
        for reply in replies:
            wire.write(connection, _encode_reply(state, reply))
        return
    wire.write(connection, payload)


def _encode_reply(state: WorkerState, reply: object) -> wire.Encoded:
    assert isinstance(reply, wire.DoneMessage | wire.FailedMessage)
    try:
        return wire.encode([reply], [reply.task_id], state.by_value)
    except BaseException as error:
        error.add_note(f"raised while pickling the result of the task to send it back from {state.name}")
        return wire.encode([state.failure(reply.task_id, error)], [reply.task_id], state.by_value)


def _end_with_main(alive: Connection, job: str) -> None:
    """Wait for the main process to die (end-of-file on ``alive``), then clean up and exit
    at once, also while a task is running."""
    with contextlib.suppress(EOFError, OSError):
        while True:
            alive.recv_bytes()
    shm.sweep(job)
    os._exit(1)


def worker_main(connection: Connection, index: int, job: str, blas_threads: int, alive: Connection) -> None:
    """Entry point of a worker process: serve tasks until told to stop or the main dies.

    Replies go back in batches: after a short task the reply waits (at most
    ``REPLY_HOLD_SECONDS``) while the next queued message is also short, so a burst of tiny
    tasks costs one write each way; a long or unknown task's reply leaves at once.
    """
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    threading.Thread(target=_end_with_main, args=(alive, job), name="shoal-main-watch", daemon=True).start()
    limits = _limit_blas(blas_threads)
    state = WorkerState(f"worker {index} (pid {os.getpid()})")
    inbox = _Inbox(connection)
    replies: list[object] = []

    def report_start(task_id: int) -> None:
        wire.send(connection, [wire.StartedMessage(task_id)])

    held_since = 0.0
    main_gone = False
    try:
        while True:
            if not inbox.queue:
                if inbox.stopped:
                    break
                inbox.refill(block=True)
                continue
            message = inbox.queue.popleft()
            if isinstance(message, wire.DropMessage):
                state.drop(message.drops, message.dropped_segments)
            elif isinstance(message, Undelivered):
                if not replies:
                    held_since = time.perf_counter()
                replies.append(state.failure(message.task_id, message.error))
            else:
                assert isinstance(message, wire.TaskMessage)
                if inbox.skip(message):
                    continue
                if not replies:
                    held_since = time.perf_counter()
                replies.append(state.run(message, report_start if message.report_start else None))
            if not replies:
                continue
            if not (inbox.next_is_short() and time.perf_counter() - held_since < REPLY_HOLD_SECONDS):
                _send_replies(connection, state, replies)
                replies = []
    except (EOFError, OSError):
        main_gone = True
    finally:
        state.segments.clear()
        if main_gone:
            shm.sweep(job)  # the main process died without releasing its segments
        del limits

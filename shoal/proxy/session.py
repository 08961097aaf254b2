"""One client's state on the server: its own engine, its bases, its memory limit, its errors.

Every batch is decoded with the wire limits and verified against the bases this client declared
before it reaches the engine; another client's bases are invisible (each session has an engine
of its own). Work runs on the session's worker thread in arrival order; answers go to whichever
connection the session has at the time (a client may reconnect and resume within the grace
period). An error while running a batch is kept and answered to the next request; the bases
the batch declared stay as the engine left them, so the client and the server agree on what exists
after a program catches the error and goes on (a refused batch runs again in parts, as in
``shoal.salvage``).
"""

from __future__ import annotations

import logging
import queue
import secrets
import socket
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from shoal import salvage
from shoal.bytecode import BaseDecl, Batch, BytecodeError, View, loads, verify
from shoal.bytecode.verify import check_view
from shoal.engine import Component, fp_signals
from shoal.proxy import compression
from shoal.proxy.notes import ServerNotes
from shoal.proxy.preview import downsample
from shoal.proxy.protocol import (
    SESSION_ID_BYTES,
    ErrorKind,
    Kind,
    Limits,
    ProtocolError,
    RemoteError,
    server_data,
    server_error,
    server_fetch,
    server_preview,
)
from shoal.proxy.stream import Frame, FrameWriter, frame_bytes

log = logging.getLogger("shoal.proxy")


class LimitExceeded(ValueError):
    """A batch or request exceeds what this client may do (a base not live, a memory limit)."""


class MemoryLimitExceeded(LimitExceeded):
    """A batch would take this client past its memory limit."""


def error_kind(error: BaseException) -> ErrorKind:
    """How the client is told of ``error``: a memory limit or a failed allocation as MEMORY (a
    ``MemoryError`` there), a batch or request refused by the checks as REJECTED, else ENGINE."""
    if isinstance(error, (MemoryLimitExceeded, MemoryError)):
        return ErrorKind.MEMORY
    if isinstance(error, (BytecodeError, LimitExceeded, ProtocolError)):
        return ErrorKind.REJECTED
    return ErrorKind.ENGINE


@dataclass(frozen=True)
class SessionSettings:
    """What every session of one server shares."""

    engine: Callable[[], Component]  # a new, initialised component for a session
    limits: Limits
    memory_limit: int  # bytes of live bases per client
    heartbeat_seconds: float


class Session:
    """A client's engine and the bookkeeping the server needs to serve it safely."""

    def __init__(self, settings: SessionSettings, peer: str) -> None:
        self.id = secrets.token_bytes(SESSION_ID_BYTES)
        self.settings = settings
        self.peer = peer
        self.known: dict[int, BaseDecl] = {}
        self.lost: set[int] = set()  # bases of batches that were rejected or failed
        self.live_bytes = 0
        self.received = 0  # the last client sequence number accepted
        self.error: RemoteError | None = None
        self.notes = ServerNotes()  # floating-point notes of batches run, for the next answer
        fp_signals.one_batch_at_a_time()  # sessions' batches must not mix their notes
        self.writer: FrameWriter | None = None
        self._reader: tuple[FrameWriter, threading.Thread] | None = None  # the connection reading for it
        self.pending_requests = 0
        self.disconnected_at: float | None = None
        self.closed = threading.Event()  # set once the engine is shut down
        self.finished = threading.Event()  # set once the last answer (to a BYE) is sent
        self._queue: queue.SimpleQueue[Frame | None] = queue.SimpleQueue()
        self._engine = settings.engine()
        self._worker = threading.Thread(target=self._work, name=f"shoal-session-{self.id.hex()[:8]}", daemon=True)
        self._heartbeat = threading.Thread(target=self._beat, name="shoal-heartbeat", daemon=True)
        self._lock = threading.Lock()
        self._worker.start()
        self._heartbeat.start()

    # ------------------------------------------------------------------ from the connection

    def attach(self, writer: FrameWriter) -> None:
        """Answer on ``writer`` from now on. A connection the session had before is closed and
        its reader waited for first, so ``received`` counts exactly the frames it took."""
        with self._lock:
            previous, self._reader = self._reader, (writer, threading.current_thread())
        if previous is not None:
            old_writer, old_thread = previous
            try:
                old_writer.sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            old_thread.join(timeout=10)
        with self._lock:
            self.writer = writer
            self.disconnected_at = None

    def detach(self, writer: FrameWriter) -> None:
        with self._lock:
            if self._reader is not None and self._reader[0] is writer:
                self._reader = None
            if self.writer is writer:
                self.writer = None
                self.disconnected_at = time.monotonic()

    def accept(self, frame: Frame) -> None:
        """Take a frame in arrival order (its sequence number was checked by the connection)."""
        self.received = frame.sequence
        if frame.kind == Kind.CANCEL:
            self._drop_queued()
            self.close()
            return
        if frame.kind in (Kind.FETCH, Kind.PREVIEW, Kind.SYNC, Kind.BYE):
            with self._lock:
                self.pending_requests += 1
        self._queue.put(frame)

    def close(self) -> None:
        """Stop the worker after the frame it is running, then shut the engine down."""
        if not self.closed.is_set():
            self.closed.set()
            self._queue.put(None)

    # --------------------------------------------------------------------- the worker

    def _drop_queued(self) -> None:
        try:
            while True:
                self._queue.get_nowait()
        except queue.Empty:
            pass

    def _work(self) -> None:
        bye: Frame | None = None
        try:
            while not self.closed.is_set():
                frame = self._queue.get()
                if frame is None or self.closed.is_set():
                    break
                if frame.kind == Kind.BYE:
                    bye = frame
                    break
                self._handle(frame)
            try:
                self._engine.shutdown()
            except Exception as error:  # answered to a waiting BYE, logged otherwise
                self._keep(RemoteError(ErrorKind.ENGINE, -1, f"shutting down: {type(error).__name__}: {error}", traceback.format_exc()))
            self.known.clear()
            self.closed.set()
            if bye is not None:  # answered once the engine has let go of everything
                self._handle(bye)
        finally:
            self.closed.set()
            self.finished.set()

    def _handle(self, frame: Frame) -> None:
        if frame.kind == Kind.EXECUTE:
            self._execute(frame)
            return
        try:
            if frame.kind in (Kind.SYNC, Kind.BYE):
                self._answer_error_or(frame, lambda: self._reply(Kind.OK, frame.sequence))
            elif frame.kind == Kind.FETCH:
                view, codecs = server_fetch(frame.payload, self.settings.limits)
                self._answer_error_or(frame, lambda: self._send_array(frame.sequence, self._fetch(view), codecs))
            elif frame.kind == Kind.PREVIEW:
                view, codecs, shape, reduction = server_preview(frame.payload, self.settings.limits)
                self._answer_error_or(frame, lambda: self._send_array(frame.sequence, downsample(self._fetch(view), shape, reduction), codecs))
        except (ProtocolError, LimitExceeded, BytecodeError) as error:
            self._reply_error(frame.sequence, RemoteError(error_kind(error), -1, str(error), ""))
        except Exception as error:  # an engine failure while reading: the client sees it with its traceback
            self._reply_error(frame.sequence, RemoteError(error_kind(error), -1, f"{type(error).__name__}: {error}", traceback.format_exc()))
        finally:
            with self._lock:
                self.pending_requests -= 1

    def _answer_error_or(self, frame: Frame, answer: Callable[[], None]) -> None:
        """Answer the kept error (and forget it), or run ``answer``."""
        error, self.error = self.error, None
        if error is not None:
            self._reply_error(frame.sequence, error)
        else:
            answer()

    def _execute(self, frame: Frame) -> None:
        batch: Batch | None = None
        try:
            batch = self._without_lost_releases(loads(frame.payload, limits=self.settings.limits.wire))
            watched = ServerNotes.conditions(frame.header.flags)
            verify(batch, self.known, semantics=True)
            self._account(batch)
        except (BytecodeError, LimitExceeded, ProtocolError) as error:
            refused = RemoteError(error_kind(error), -1, f"batch {frame.sequence} rejected: {error}", "")
            if batch is not None and salvage.rejected(error):
                self._keep(self._salvage(batch) or refused)
                return
            self._keep(refused)
            if batch is not None:
                self.lost.update(decl.id for decl in batch.bases if decl.id not in self.known)
            return
        record = fp_signals.watch(batch, watched)
        try:
            try:
                self._engine.execute(batch)
            finally:
                self.notes.ran(frame.sequence, record)
        except Exception as error:
            failed = RemoteError(error_kind(error), -1, f"{type(error).__name__}: {error}", traceback.format_exc())
            if salvage.rejected(error):  # the engine's own verification: nothing of it ran
                self._unaccount(batch)
                self._keep(self._salvage(batch) or failed)
                return
            # Otherwise the engine declared the batch's bases before running any of it and
            # keeps them, as it does for a program in its own process: the program goes on with
            # the arrays made before the failing instruction, in its batch too, so they stay known.
            self._keep(failed)
        self._forget_released(batch)

    def _salvage(self, batch: Batch) -> RemoteError | None:
        """Run what of a refused ``batch`` verifies in parts, as the runtime does for a batch
        its own component refused (``shoal.salvage``); returns the first error of a part, in
        program order. The bases whose declarations are refused on their own are lost; the
        others are declared and the program goes on with them."""
        try:
            first = salvage.salvage(batch, self._execute_part, self.lost)
        except Exception as error:  # a declaration the engine or the memory limit refused
            self.lost.update(decl.id for decl in batch.bases if decl.id not in self.known)
            first = error
        if first is None:
            return None
        return RemoteError(error_kind(first), -1, f"{type(first).__name__}: {first}", "".join(traceback.format_exception(first)))

    def _execute_part(self, part: Batch) -> None:
        """Run ``part`` of a refused batch (``shoal.salvage``), with the checks of a batch."""
        verify(part, self.known, semantics=True)
        self._account(part)
        try:
            self._engine.execute(part)
        except Exception as error:
            if salvage.rejected(error):
                self._unaccount(part)
            else:
                self._forget_released(part)
            raise
        self._forget_released(part)

    def _unaccount(self, batch: Batch) -> None:
        """Forget the bases ``batch`` declared: its engine refused it before running any of it."""
        for decl in batch.bases:
            if self.known.pop(decl.id, None) is not None:
                self.live_bytes -= decl.nbytes

    def _without_lost_releases(self, batch: Batch) -> Batch:
        """``batch`` without the releases of bases whose batch never ran (the program still
        drops its arrays; those releases must not fail a later batch)."""
        if not self.lost:
            return batch
        kept = []
        for instruction in batch.instructions:
            if instruction.op == "release" and instruction.attr("base") in self.lost:
                self.lost.discard(instruction.attr("base"))
                continue
            kept.append(instruction)
        return Batch(bases=batch.bases, data=batch.data, instructions=kept, donated=batch.donated)

    def _keep(self, error: RemoteError) -> None:
        log.info("session %s: %s", self.id.hex()[:8], error.message)
        if self.error is None:
            self.error = error

    def _account(self, batch: Batch) -> None:
        """Refuse a batch that, run in program order, would hold more than the client's limit:
        a base counts from its first use (or from the start if it carries data) to its release."""
        declared = {decl.id: decl.nbytes for decl in batch.bases}
        started = {base for base in declared if base in batch.data}
        live = self.live_bytes + sum(declared[base] for base in started)
        peak = live
        for instruction in batch.instructions:
            if instruction.op == "release":
                base = instruction.attr("base")
                if base in started or base in self.known:
                    live -= declared.get(base, 0) if base in declared else self.known[base].nbytes
                    started.discard(base)
                continue
            for operand in (*instruction.outputs, *instruction.inputs):
                base = getattr(operand, "base", None)
                if base in declared and base not in started:
                    started.add(base)
                    live += declared[base]
            peak = max(peak, live)
        if peak > self.settings.memory_limit:
            raise MemoryLimitExceeded(
                f"the batch would hold {peak} bytes of arrays at once (this client already holds "
                f"{self.live_bytes}), more than its limit of {self.settings.memory_limit} bytes"
            )
        for decl in batch.bases:
            self.known[decl.id] = decl
        self.live_bytes += sum(declared.values())

    def _forget_released(self, batch: Batch) -> None:
        for instruction in batch.instructions:
            if instruction.op == "release":
                decl = self.known.pop(instruction.attr("base"), None)
                if decl is not None:
                    self.live_bytes -= decl.nbytes

    def _fetch(self, view: View) -> np.ndarray:
        decl = self.known.get(view.base)
        if decl is None:
            raise LimitExceeded(f"base {view.base} is not live")
        check_view(view, decl, "fetch")
        return self._engine.fetch(view)

    # --------------------------------------------------------------------- answers

    def _send_array(self, sequence: int, array: np.ndarray, codecs: frozenset) -> None:
        array = np.asarray(array, order="C")  # not ascontiguousarray: it makes a 0-d array 1-d
        codec, body = compression.encode(array, codecs)
        head = server_data(array.dtype, array.shape, codec, array.nbytes)
        self._reply(Kind.DATA, sequence, (head, body))

    def _reply_error(self, sequence: int, error: RemoteError) -> None:
        self._reply(Kind.ERROR, sequence, (server_error(error.kind, error.message, error.traceback, error.instruction),))

    def _reply(self, kind: Kind, sequence: int, chunks: tuple = ()) -> None:
        """Send an answer (after the floating-point notes of the batches run before it, in
        the same write) or a heartbeat."""
        writer = self.writer
        if writer is None:
            return  # disconnected: a resumed client asks again
        parts = frame_bytes(kind, sequence, chunks)
        notes = self.notes.frame_payload() if kind in (Kind.OK, Kind.DATA, Kind.ERROR) else None
        if notes is not None:
            parts = frame_bytes(Kind.NOTES, sequence, (notes,)) + parts
        try:
            writer.send(parts)
        except OSError:
            self.detach(writer)

    def _beat(self) -> None:
        """While a request waits, tell the client every heartbeat that the server is alive."""
        interval = self.settings.heartbeat_seconds
        while not self.closed.wait(interval):
            if self.pending_requests > 0:
                self._reply(Kind.HEARTBEAT, self.received)

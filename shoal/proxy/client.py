"""The client side of the proxy: a component whose engine runs on a server (paper 004 §3.2).

``execute`` sends the batch and returns at once, so batches stream while the server computes.
``fetch`` asks for a view and waits for its data; the server's heartbeats tell a slow answer from
a lost server, which raises :class:`ConnectionError` after ``timeout`` seconds of silence. An
error in a batch that ran remotely is raised at the next fetch, flush or shutdown as an
:class:`~shoal.engine.component.EngineError` with the remote traceback appended.

If the connection drops, the client reconnects and resumes its session (the server keeps it for
its grace period), sends again every frame the server did not receive, and asks again what it
was waiting for. Frames are kept for that until a reply shows the server has them, up to
``resume_bytes``; past that, a lost connection cannot be resumed and raises.
"""

from __future__ import annotations

import collections
import socket
import ssl
import sys
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from shoal import settings, trace
from shoal.bytecode import Batch, View, dumps
from shoal.engine import fp_signals
from shoal.engine.component import Component, EngineError
from shoal.engine.fp_notes import NotesError
from shoal.proxy import compression
from shoal.proxy.auth import TokenError, check_token, read_token_file
from shoal.proxy.fetched import FetchedArrays
from shoal.proxy.notes import RemoteWatches
from shoal.proxy.protocol import (
    DEFAULT_LIMITS,
    FRAME_HEADER,
    SERVER_KINDS,
    SESSION_ID_BYTES,
    WATCH_FLAGS,
    ErrorKind,
    Kind,
    Limits,
    ProtocolError,
    Reduction,
    client_data,
    client_error,
    client_fetch,
    client_notes,
    client_preview,
    client_welcome,
    encode_preamble,
)
from shoal.proxy.stream import Chunk, FrameWriter, PeerClosed, frame_bytes, read_frame, tune

NO_SESSION = bytes(SESSION_ID_BYTES)


class RemoteEngineError(EngineError):
    """A batch failed on the server; the message ends with the server's traceback."""


class RemoteMemoryError(RemoteEngineError, MemoryError):
    """A batch needed more memory than the server grants this client or has: a ``MemoryError``,
    as NumPy's allocation raises, that comes at the read that waited for the batch."""


@dataclass(frozen=True)
class ClientSettings:
    host: str
    port: int
    token: bytes
    tls: ssl.SSLContext | None = None
    server_name: str | None = None
    timeout: float = 20.0  # seconds without any frame while waiting for an answer
    connect_timeout: float = 10.0
    reconnect_seconds: float = 10.0
    resume_bytes: int = 256 << 20
    compress: bool = True  # accept zstd-compressed arrays (the server sends them where that pays)
    limits: Limits = DEFAULT_LIMITS


def parse_address(address: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` for IPv6) as a host and a port."""
    host, separator, port = address.rpartition(":")
    if not separator or not port.isdigit() or not host:
        raise ValueError(f"a Shoal server address is HOST:PORT, got {address!r}")
    return host.strip("[]"), int(port)


class ProxyClient(Component):
    """Sends batches to a ``shoal serve`` server and reads results from it."""

    name = "proxy"

    def __init__(self, settings: ClientSettings) -> None:
        self.settings = settings
        self.session = NO_SESSION
        self.sent = 0  # sequence number of the last frame sent
        self._unacknowledged: collections.deque[tuple[int, list[Chunk], int]] = collections.deque()
        self._kept_bytes = 0
        self._resumable = True
        self._sock: socket.socket | None = None
        self._writer: FrameWriter | None = None
        self._lock = threading.RLock()
        self._closed = False
        self._failure: ConnectionError | None = None  # why the session is lost, once it is
        self._unsynced = False  # batches sent since the last answer
        self.round_trips = 0  # requests answered (fetch, preview, sync)
        self.bytes_sent = 0
        self.bytes_received = 0
        self.fetched = FetchedArrays()
        self.watches = RemoteWatches()  # floating-point notes awaited from the server
        self._connect(resume=False)

    @classmethod
    def configure(cls, environ: Mapping[str, str] | None = None) -> ClientSettings:
        """The server ``SHOAL_REMOTE`` names, with ``SHOAL_TOKEN`` or ``SHOAL_TOKEN_FILE``,
        ``SHOAL_TLS_CA`` and ``SHOAL_PROXY_COMPRESSION``."""
        address = settings.REMOTE.value(environ=environ)
        if not address:
            raise ValueError("the proxy component needs SHOAL_REMOTE=HOST:PORT")
        token = settings.TOKEN.value(environ=environ)
        if not token:
            token_file = settings.TOKEN_FILE.value(environ=environ)
            if not token_file:
                raise TokenError("connecting to a Shoal server needs its token: SHOAL_TOKEN_FILE, SHOAL_TOKEN or token=")
            token = read_token_file(token_file)
        host, port = parse_address(address)
        authority = settings.TLS_CA.value(environ=environ)
        tls = ssl.create_default_context(cafile=authority) if authority else None
        return ClientSettings(host, port, check_token(token), tls, compress=settings.PROXY_COMPRESSION.value(environ=environ) == "on")

    def _connect(self, resume: bool) -> int:
        """Open a connection and do the handshake; returns the last frame the server has."""
        settings = self.settings
        sock = socket.create_connection((settings.host, settings.port), timeout=settings.connect_timeout)
        try:
            tune(sock)
            if settings.tls is not None:
                sock = settings.tls.wrap_socket(sock, server_hostname=settings.server_name or settings.host)
            sock.sendall(encode_preamble(settings.token, self.session if resume else NO_SESSION))
            sock.settimeout(settings.timeout)
            try:
                frame = read_frame(sock, SERVER_KINDS, settings.limits)
            except (PeerClosed, ConnectionResetError):
                raise ConnectionError(
                    f"the Shoal server at {self._where()} closed the connection during the handshake "
                    "(a wrong token, or a session that ended)"
                ) from None
            except TimeoutError:
                raise ConnectionError(f"{self._where()} did not answer the handshake within {settings.timeout} s") from None
            if frame.kind == Kind.ERROR:
                raise ConnectionError(f"the Shoal server at {self._where()} refused the connection: {client_error(frame.payload, settings.limits).message}")
            if frame.kind != Kind.WELCOME:
                raise ProtocolError(f"expected a welcome, got {frame.kind.name}")
            session, resumed, received, _ = client_welcome(frame.payload)
        except BaseException:
            sock.close()
            raise
        if resume and not resumed:
            sock.close()
            raise ConnectionError("the Shoal server no longer has this program's arrays")
        self._sock, self._writer, self.session = sock, FrameWriter(sock), session
        return received

    def _reconnect(self, cause: BaseException) -> None:
        """Resume the session on a new connection and send again what the server lacks; if
        that fails, the session is lost: every later request raises the same error."""
        try:
            self._resume(cause)
        except ConnectionError as error:
            self._failure = error
            self._closed = True
            self._drop_socket()
            raise

    def _resume(self, cause: BaseException) -> None:
        self._drop_socket()
        if self._closed:
            raise ConnectionError("the connection to the Shoal server is closed") from cause
        if not self._resumable:
            raise ConnectionError(f"lost the Shoal server at {self._where()} ({cause}); too much unacknowledged work to resume") from cause
        deadline = time.monotonic() + self.settings.reconnect_seconds
        delay = 0.05
        while True:
            try:
                received = self._connect(resume=True)
                break
            except (OSError, ProtocolError) as error:
                if (isinstance(error, ConnectionError) and "refused the connection" in str(error)) or time.monotonic() > deadline:
                    raise ConnectionError(f"lost the Shoal server at {self._where()}: {error}") from cause
                time.sleep(delay)
                delay = min(1.0, delay * 2)
        self._acknowledge(received)
        assert self._writer is not None
        for _, parts, _ in self._unacknowledged:
            self._writer.send(parts)

    def _drop_socket(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass
        self._sock = self._writer = None

    def _where(self) -> str:
        return f"{self.settings.host}:{self.settings.port}"

    # ------------------------------------------------------------------ frames

    def _send(self, kind: Kind, chunks: list[Chunk], flags: int = 0) -> int:
        """Send one frame (reconnecting if needed); returns its sequence number."""
        if self._failure is not None:
            raise ConnectionError(str(self._failure)) from self._failure
        if self._closed:
            raise ConnectionError("the connection to the Shoal server is closed")
        self.sent += 1
        parts = frame_bytes(kind, self.sent, chunks, flags)
        size = sum(memoryview(part).nbytes for part in parts)
        self.bytes_sent += size
        self._unacknowledged.append((self.sent, parts, size))
        self._kept_bytes += size
        while self._kept_bytes > self.settings.resume_bytes and len(self._unacknowledged) > 1:
            self._kept_bytes -= self._unacknowledged.popleft()[2]
            self._resumable = False
        try:
            if self._writer is None:
                raise ConnectionError("not connected")
            self._writer.send(parts)
        except OSError as error:
            self._reconnect(error)
        return self.sent

    def _acknowledge(self, received: int) -> None:
        while self._unacknowledged and self._unacknowledged[0][0] <= received:
            self._kept_bytes -= self._unacknowledged.popleft()[2]
        if not self._unacknowledged:
            self._resumable = True

    def _request(self, kind: Kind, payload: bytes = b""):
        """Send a request and wait for its answer frame (heartbeats keep the wait alive)."""
        with self._lock:
            tracer, began = trace.TRACER, time.perf_counter()
            sequence = self._send(kind, [payload] if payload else [])
            if tracer is not None:
                sent = time.perf_counter()
                tracer.complete(f"send {kind.name} request", "communication", began, sent, {"bytes": len(payload)})
            while True:
                try:
                    if self._sock is None:
                        raise ConnectionError("not connected")
                    frame = read_frame(self._sock, SERVER_KINDS, self.settings.limits)
                except (OSError, ProtocolError) as error:
                    if isinstance(error, ProtocolError):
                        raise ConnectionError(f"the Shoal server at {self._where()} sent a malformed answer: {error}") from error
                    self._reconnect(error)
                    continue
                except BaseException:  # Ctrl-C while waiting: stop the remote work too
                    self._cancel()
                    raise
                self.bytes_received += len(frame.payload) + FRAME_HEADER.size
                if frame.kind == Kind.HEARTBEAT:
                    self._acknowledge(frame.sequence)
                    continue
                if frame.kind == Kind.NOTES:
                    self._notes(frame.payload)
                    continue
                if frame.sequence != sequence:
                    continue  # the answer to a request asked again after a reconnect
                self.watches.answered(sequence)
                self._acknowledge(sequence)
                self._unsynced = False
                self.round_trips += 1
                if tracer is not None:
                    tracer.complete(f"wait for {kind.name} answer", "wait", sent, time.perf_counter(), {"bytes": len(frame.payload)})
                if frame.kind == Kind.ERROR:
                    self._raise(client_error(frame.payload, self.settings.limits))
                return frame

    def _notes(self, payload: bytearray) -> None:
        """Take the floating-point notes the server sent (malformed notes end the session, as
        any malformed answer does)."""
        try:
            self.watches.received(client_notes(payload, self.settings.limits))
        except (ProtocolError, NotesError) as error:
            self._cancel()
            raise ConnectionError(f"the Shoal server at {self._where()} sent malformed floating-point notes: {error}") from error

    def _raise(self, error) -> None:
        text = error.message
        if error.traceback:
            text += "\n\nRemote traceback (most recent call last, on the Shoal server):\n" + error.traceback
        raise (RemoteMemoryError if error.kind == ErrorKind.MEMORY else RemoteEngineError)(text)

    def _cancel(self) -> None:
        try:
            if self._writer is not None:
                self.sent += 1
                self._writer.frame(Kind.CANCEL, self.sent)
        except OSError:
            pass
        self._closed = True
        self._drop_socket()

    # ------------------------------------------------------------------ component

    def execute(self, batch: Batch) -> None:
        """Send ``batch``; once the session is lost or cancelled (Ctrl-C), batches are dropped:
        nothing they compute can be read (every read raises)."""
        data = dumps(batch, limits=self.settings.limits.wire)
        self.fetched.changed_by(batch)
        record = fp_signals.claim(batch)
        with self._lock:
            if self._failure is not None or self._closed:
                if record is not None:
                    record.done = True
            else:
                tracer, began = trace.TRACER, time.perf_counter()
                watched = record.watched & WATCH_FLAGS if record is not None else 0
                self.watches.sent(self._send(Kind.EXECUTE, [data], watched), record)
                self._unsynced = True
                if tracer is not None:
                    tracer.complete("send batch", "communication", began, time.perf_counter(), {"bytes": len(data)})

    def _codecs(self) -> tuple:
        return compression.available() if self.settings.compress else (compression.Codec.RAW,)

    def fetch(self, view: View) -> np.ndarray:
        known = self.fetched.get(view)
        if known is not None:
            return known
        array = self._array(self._request(Kind.FETCH, client_fetch(view, self._codecs())))
        self.fetched.put(view, array)
        return array

    def preview(self, view: View, shape: tuple[int, int], reduction: Reduction) -> np.ndarray:
        payload = client_preview(view, shape, reduction, self._codecs())
        return self._array(self._request(Kind.PREVIEW, payload))

    def _array(self, frame) -> np.ndarray:
        try:
            head = client_data(frame.payload, self.settings.limits)
            raw = compression.decode(head.codec, head.body, head.raw_length)
        except ProtocolError as error:
            raise ConnectionError(f"the Shoal server at {self._where()} sent a malformed array: {error}") from error
        array = np.frombuffer(raw, dtype=head.dtype).reshape(head.shape)
        return array if array.flags.writeable else array.copy()

    def flush(self) -> None:
        """Wait until the server has run every batch sent so far; raise its error if one failed
        (no round trip when nothing was sent since the last answer)."""
        if self._unsynced or self._failure is not None:
            self._request(Kind.SYNC)

    def abandon(self) -> None:
        """Ctrl-C ended the program: the server drops the batches it has not run (a goodbye
        would wait for all of them, minutes for a long loop's, while other sessions wait too)."""
        with self._lock:
            if not self._closed:
                self._cancel()

    def shutdown(self) -> None:
        with self._lock:
            if self._closed:
                return
            try:
                if self._sock is not None:
                    self._request(Kind.BYE)
            finally:
                self._closed = True
                self._drop_socket()
                self.watches.close()
                if settings.STATS.value():
                    print(self.statistics(), file=sys.stderr)

    def forked(self) -> None:
        """In a forked child: close this process's descriptor of the parent's connection, and
        nothing more (no goodbye, no shutdown of the socket: the parent's session goes on)."""
        self._closed = True
        self._drop_socket()
        return None

    def statistics(self) -> str:
        """What ``SHOAL_STATS=1`` prints at exit: round trips (the BYE included) and traffic."""
        return (
            f"shoal proxy: {self.round_trips} round trips, {self.bytes_sent / 2**20:.1f} MiB sent, "
            f"{self.bytes_received / 2**20:.1f} MiB received"
        )

    def live_bases(self) -> int:
        return 0

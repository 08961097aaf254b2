"""``shoal serve``: the server side of the proxy (paper 004 §3.2), secure by default.

It listens on loopback unless told otherwise, and refuses any other address without TLS and a
token. A connection must send its preamble within :data:`HANDSHAKE_SECONDS`; the token is
compared in constant time before anything else is parsed. Each client gets a :class:`Session`
(its own engine, bases and memory limit). A connection that sends anything malformed, oversized,
out of sequence or unauthenticated is closed with a logged reason; other clients are unaffected.
A client that disconnects keeps its session for ``grace_seconds`` and may resume it.
"""

from __future__ import annotations

import contextlib
import dataclasses
import ipaddress
import logging
import socket
import ssl
import threading
import time
from dataclasses import dataclass

from shoal.proxy.auth import same_token
from shoal.proxy.protocol import (
    CLIENT_KINDS,
    PREAMBLE_HEADER,
    SESSION_ID_BYTES,
    ErrorKind,
    Kind,
    ProtocolError,
    decode_preamble_header,
    server_error,
    server_welcome,
)
from shoal.proxy.session import Session, SessionSettings
from shoal.proxy.stream import FrameWriter, PeerClosed, read_exact, read_frame, tune

log = logging.getLogger("shoal.proxy")

HANDSHAKE_SECONDS = 5.0
DEFAULT_PORT = 7787
NO_SESSION = bytes(SESSION_ID_BYTES)
FRAME_OVERHEAD_BYTES = 64 << 20  # a client frame may exceed the client's memory limit by this much


class Refused(ProtocolError):
    """An authenticated client that cannot be served (told why before the connection closes)."""


class InsecureBind(ValueError):
    """A non-loopback address without TLS and a token."""


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@dataclass(frozen=True)
class ServerSettings:
    host: str
    port: int
    token: bytes
    session: SessionSettings
    tls: ssl.SSLContext | None = None
    grace_seconds: float = 60.0
    max_clients: int = 64
    handshake_seconds: float = HANDSHAKE_SECONDS


class ProxyServer:
    """Accepts clients on a thread per connection; ``close`` ends every session."""

    def __init__(self, settings: ServerSettings) -> None:
        if not is_loopback(settings.host) and settings.tls is None:
            raise InsecureBind(f"refusing to listen on {settings.host}: a non-loopback address needs TLS (--tls-cert/--tls-key)")
        self.settings = settings
        self._sessions: dict[bytes, Session] = {}
        self._lock = threading.Lock()
        self._closed = threading.Event()
        family = socket.AF_INET6 if ":" in settings.host else socket.AF_INET
        self._listener = socket.socket(family, socket.SOCK_STREAM)
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind((settings.host, settings.port))
        self._listener.listen(16)
        self.address = self._listener.getsockname()[:2]
        self._threads: list[threading.Thread] = []

    # ------------------------------------------------------------------------ lifecycle

    def start(self) -> ProxyServer:
        for target, name in ((self._accept_loop, "shoal-accept"), (self._reap_loop, "shoal-reap")):
            thread = threading.Thread(target=target, name=name, daemon=True)
            thread.start()
            self._threads.append(thread)
        return self

    def close(self) -> None:
        """Stop accepting, close every session and wait for their engines to shut down."""
        self._closed.set()
        try:
            self._listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self._listener.close()
        with self._lock:
            sessions = list(self._sessions.values())
            self._sessions.clear()
        for session in sessions:
            session.close()
        for session in sessions:
            session.finished.wait(10)

    def __enter__(self) -> ProxyServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def session_count(self) -> int:
        with self._lock:
            return sum(not session.closed.is_set() for session in self._sessions.values())

    # ------------------------------------------------------------------------ accepting

    def _accept_loop(self) -> None:
        while not self._closed.is_set():
            try:
                sock, peer = self._listener.accept()
            except OSError:
                return
            thread = threading.Thread(target=self._serve, args=(sock, f"{peer[0]}:{peer[1]}"), name="shoal-connection", daemon=True)
            thread.start()

    def _reap_loop(self) -> None:
        """End sessions whose client has been gone longer than the grace period."""
        while not self._closed.wait(min(1.0, self.settings.grace_seconds / 4)):
            now = time.monotonic()
            with self._lock:
                for key, session in list(self._sessions.items()):
                    gone = session.disconnected_at
                    if session.closed.is_set() or (gone is not None and now - gone > self.settings.grace_seconds):
                        if not session.closed.is_set():
                            log.info("session %s: client gone for %.0f s, its arrays are dropped", key.hex()[:8], now - gone)
                        session.close()
                        del self._sessions[key]

    def _serve(self, sock: socket.socket, peer: str) -> None:
        session: Session | None = None
        writer: FrameWriter | None = None
        try:
            tune(sock)
            sock.settimeout(self.settings.handshake_seconds)
            if self.settings.tls is not None:
                sock = self.settings.tls.wrap_socket(sock, server_side=True)
            session, resumed = self._handshake(sock, peer)
            writer = FrameWriter(sock)
            session.attach(writer)  # after the previous connection's last frame
            writer.frame(Kind.WELCOME, 0, (server_welcome(session.id, resumed, session.received, self.settings.session.limits),))
            sock.settimeout(None)
            self._read_frames(sock, session)
        except Refused as error:
            log.warning("connection from %s refused: %s", peer, error)
            with contextlib.suppress(OSError):
                FrameWriter(sock).frame(Kind.ERROR, 0, (server_error(ErrorKind.REJECTED, str(error), ""),))
        except (ProtocolError, PeerClosed, TimeoutError, ssl.SSLError, OSError) as error:
            if isinstance(error, ProtocolError) and session is not None:
                session.close()  # a client that breaks the protocol cannot resume
            if not isinstance(error, PeerClosed):
                log.warning("connection from %s closed: %s: %s", peer, type(error).__name__, error)
        finally:
            if session is not None and writer is not None:
                session.detach(writer)
            try:
                sock.close()
            except OSError:
                pass

    def _handshake(self, sock: socket.socket, peer: str) -> tuple[Session, bool]:
        token_length = decode_preamble_header(bytes(read_exact(sock, PREAMBLE_HEADER.size)))
        token = bytes(read_exact(sock, token_length))
        wanted = bytes(read_exact(sock, SESSION_ID_BYTES))  # read before judging: closing with it unread resets the connection
        if not same_token(token, self.settings.token):
            raise ProtocolError("wrong token")
        with self._lock:
            if wanted != NO_SESSION:
                session = self._sessions.get(wanted)
                if session is None or session.closed.is_set():
                    raise Refused("the server no longer has this session (it ended or its grace period passed)")
                log.info("session %s resumed from %s", wanted.hex()[:8], peer)
                return session, True
            if sum(not s.closed.is_set() for s in self._sessions.values()) >= self.settings.max_clients:
                raise Refused(f"the server has {self.settings.max_clients} clients already")
            session = Session(self.settings.session, peer)
            self._sessions[session.id] = session
        log.info("session %s opened from %s", session.id.hex()[:8], peer)
        return session, False

    def _read_frames(self, sock: socket.socket, session: Session) -> None:
        session_settings = self.settings.session
        largest = min(session_settings.limits.max_frame_bytes, session_settings.memory_limit + FRAME_OVERHEAD_BYTES)
        limits = dataclasses.replace(session_settings.limits, max_frame_bytes=largest)
        while not session.closed.is_set():
            frame = read_frame(sock, CLIENT_KINDS, limits)
            if frame.sequence != session.received + 1:
                raise ProtocolError(f"frame {frame.sequence} out of sequence (expected {session.received + 1})")
            session.accept(frame)
            if frame.kind in (Kind.BYE, Kind.CANCEL):
                session.finished.wait(30)
                return

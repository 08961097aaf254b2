"""Reading and writing frames on a socket, shared by the client and the server.

A frame's payload is read into a buffer allocated only after its header has passed the limits.
Writes of one frame are atomic with respect to other threads writing on the same socket.
"""

from __future__ import annotations

import socket
import threading
from collections.abc import Sequence
from dataclasses import dataclass

from shoal.proxy.protocol import (
    FRAME_HEADER,
    FrameHeader,
    Kind,
    Limits,
    decode_header,
    encode_header,
)

Chunk = bytes | bytearray | memoryview
INITIAL_BUFFER = 1 << 20


class PeerClosed(ConnectionError):
    """The other side closed the connection."""


def read_exact(sock: socket.socket, length: int) -> bytearray:
    """Exactly ``length`` bytes, or :class:`PeerClosed` if the stream ends first.

    The buffer grows as bytes arrive (doubling from 1 MiB), so a header that announces more
    than the peer sends costs no more memory than what it did send.
    """
    buffer = bytearray(min(length, INITIAL_BUFFER))
    got = 0
    while got < length:
        if got == len(buffer):
            buffer.extend(bytes(min(length, 2 * len(buffer)) - len(buffer)))
        count = sock.recv_into(memoryview(buffer)[got:], len(buffer) - got)
        if count == 0:
            raise PeerClosed("the connection was closed")
        got += count
    return buffer


@dataclass(frozen=True)
class Frame:
    header: FrameHeader
    payload: bytearray

    @property
    def kind(self) -> Kind:
        return self.header.kind

    @property
    def sequence(self) -> int:
        return self.header.sequence


def read_frame(sock: socket.socket, allowed: frozenset[Kind], limits: Limits) -> Frame:
    header = decode_header(bytes(read_exact(sock, FRAME_HEADER.size)), allowed, limits)
    return Frame(header, read_exact(sock, header.length))


def frame_bytes(kind: Kind, sequence: int, chunks: Sequence[Chunk] = (), flags: int = 0) -> list[Chunk]:
    """The header and chunks of one frame, ready for :meth:`FrameWriter.send`."""
    length = sum(memoryview(chunk).nbytes for chunk in chunks)
    return [encode_header(kind, sequence, length, flags), *chunks]


class FrameWriter:
    """Sends whole frames on ``sock``; safe to share between threads."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self._lock = threading.Lock()

    def send(self, parts: Sequence[Chunk]) -> None:
        with self._lock:
            for part in parts:
                self.sock.sendall(part)

    def frame(self, kind: Kind, sequence: int, chunks: Sequence[Chunk] = ()) -> None:
        self.send(frame_bytes(kind, sequence, chunks))


def tune(sock: socket.socket) -> None:
    """TCP_NODELAY (paper 004 §3.2: a blocked interpreter waits for every small reply) and
    keep-alive probes, so that a peer that vanished is noticed even on an idle connection."""
    if sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)
        for option, value in (("TCP_KEEPIDLE", 10), ("TCP_KEEPINTVL", 5), ("TCP_KEEPCNT", 3)):
            if hasattr(socket, option):
                sock.setsockopt(socket.IPPROTO_TCP, getattr(socket, option), value)

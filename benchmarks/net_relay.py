"""A TCP relay that behaves like a slow link: a round-trip delay and a rate limit, in user space.

This kernel has no ``netem``, so the proxy benchmark puts this relay between a program and its
server. Each direction is a link of ``rate`` bytes per second with a one-way delay of half the
round trip: a chunk read at time t starts on the link when the link is free, occupies it for
``len / rate`` seconds, and is delivered ``delay`` seconds after that. Only loopback addresses
are relayed; ``close`` stops every connection and thread.

Run alone: ``python -m benchmarks.net_relay LISTEN_PORT TARGET_PORT --rtt-ms 50 --mbit 100``.
"""

from __future__ import annotations

import argparse
import collections
import socket
import threading
import time

CHUNK = 1 << 16


class Link:
    """One direction: reads from ``source``, delivers to ``target`` with delay and rate."""

    def __init__(self, source: socket.socket, target: socket.socket, delay: float, rate: float | None) -> None:
        self.source, self.target, self.delay, self.rate = source, target, delay, rate
        self._queue: collections.deque[tuple[float, bytes]] = collections.deque()
        self._ready = threading.Condition()
        self._free_at = 0.0
        self._done = False
        self.threads = [threading.Thread(target=self._read, daemon=True), threading.Thread(target=self._deliver, daemon=True)]
        for thread in self.threads:
            thread.start()

    def _read(self) -> None:
        try:
            while chunk := self.source.recv(CHUNK):
                now = time.monotonic()
                start = max(now, self._free_at)
                self._free_at = start + (len(chunk) / self.rate if self.rate else 0.0)
                with self._ready:
                    self._queue.append((self._free_at + self.delay, chunk))
                    self._ready.notify()
        except OSError:
            pass
        with self._ready:
            self._done = True
            self._ready.notify()

    def _deliver(self) -> None:
        try:
            while True:
                with self._ready:
                    while not self._queue and not self._done:
                        self._ready.wait()
                    if not self._queue:
                        break
                    due, chunk = self._queue.popleft()
                wait = due - time.monotonic()
                if wait > 0:
                    time.sleep(wait)
                self.target.sendall(chunk)
        except OSError:
            pass
        for sock in (self.target, self.source):
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass


class Relay:
    """Listens on loopback and relays every connection to ``target_port`` on loopback."""

    def __init__(self, target_port: int, rtt_ms: float = 0.0, mbit: float | None = None, listen_port: int = 0) -> None:
        self.target = ("127.0.0.1", target_port)
        self.delay = rtt_ms / 2000.0
        self.rate = mbit * 1e6 / 8 if mbit else None
        self._listener = socket.create_server(("127.0.0.1", listen_port))
        self.port = self._listener.getsockname()[1]
        self._sockets: list[socket.socket] = []
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                near, _ = self._listener.accept()
                far = socket.create_connection(self.target)
            except OSError:
                return
            for sock in (near, far):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                self._sockets.append(sock)
            Link(near, far, self.delay, self.rate)
            Link(far, near, self.delay, self.rate)

    def close(self) -> None:
        self._closed = True
        self._listener.close()
        for sock in self._sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
                sock.close()
            except OSError:
                pass

    def __enter__(self) -> Relay:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("listen_port", type=int)
    parser.add_argument("target_port", type=int)
    parser.add_argument("--rtt-ms", type=float, default=0.0)
    parser.add_argument("--mbit", type=float, default=None)
    arguments = parser.parse_args()
    with Relay(arguments.target_port, arguments.rtt_ms, arguments.mbit, arguments.listen_port):
        threading.Event().wait()


if __name__ == "__main__":
    main()

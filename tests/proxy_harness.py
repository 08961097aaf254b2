"""A live proxy server on loopback for tests, and clients for it."""

from __future__ import annotations

import contextlib
import secrets
from collections.abc import Callable, Iterator

from shoal.engine import Component, create
from shoal.engine.node import NodeConfig
from shoal.proxy.client import ClientSettings, ProxyClient
from shoal.proxy.protocol import DEFAULT_LIMITS, Limits
from shoal.proxy.server import ProxyServer, ServerSettings
from shoal.proxy.session import SessionSettings

TOKEN = secrets.token_hex(32)


def engine(stack: str = "node", threads: int = 2) -> Callable[[], Component]:
    """Makes a new ``stack`` for each session (node engines with small blocks, no compiling)."""
    configs = {"node": NodeConfig(threads=threads, block_size=1 << 12, compile="off")}

    def make() -> Component:
        return create(stack, configs)

    return make


@contextlib.contextmanager
def live_server(
    make_engine: Callable[[], Component] | None = None,
    *,
    memory_limit: int = 1 << 30,
    grace_seconds: float = 5.0,
    heartbeat_seconds: float = 0.2,
    limits: Limits = DEFAULT_LIMITS,
    tls=None,
    max_clients: int = 64,
    handshake_seconds: float = 2.0,
) -> Iterator[ProxyServer]:
    session = SessionSettings(make_engine or engine(), limits, memory_limit, heartbeat_seconds)
    settings = ServerSettings("127.0.0.1", 0, TOKEN.encode(), session, tls, grace_seconds, max_clients, handshake_seconds)
    with ProxyServer(settings) as server:
        yield server


def client_for(server: ProxyServer, *, token: str = TOKEN, timeout: float = 5.0, tls=None, **options) -> ProxyClient:
    host, port = server.address
    return ProxyClient(ClientSettings(host, port, token.encode(), tls, timeout=timeout, **options))

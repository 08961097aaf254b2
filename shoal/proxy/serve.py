"""``shoal serve``: command-line entry of the proxy server.

    shoal serve [--bind HOST:PORT] [--token-file F] [--tls-cert C --tls-key K]
                [--stack NAME] [--memory-limit BYTES] [--grace SECONDS]

The server runs until SIGINT or SIGTERM, then ends every session. It prints where it listens and
the path of the token file, never the token.
"""

from __future__ import annotations

import argparse
import logging
import signal
import ssl
import sys
import threading
from collections.abc import Sequence

import psutil

from shoal.proxy.auth import TokenError, default_token_file, token_for_server
from shoal.proxy.client import parse_address
from shoal.proxy.protocol import DEFAULT_LIMITS
from shoal.proxy.server import DEFAULT_PORT, InsecureBind, ProxyServer, ServerSettings, is_loopback
from shoal.proxy.session import SessionSettings

HEARTBEAT_SECONDS = 1.0


def engine_factory(stack: str, threads: int | None):
    """A function making a new component stack (``node``, ``pass:node``, ...) for each session;
    its engines verify every batch at ``execute`` too."""
    from shoal.engine import create
    from shoal.engine.node import NodeConfig

    create(stack).shutdown()  # fail at start for a stack that cannot be built
    configs = {"node": NodeConfig.from_settings(threads=threads)} if threads else {}

    def make():
        return create(stack, configs)

    return make


def parser() -> argparse.ArgumentParser:
    options = argparse.ArgumentParser(prog="shoal serve", description="Run array work for remote Shoal programs.")
    options.add_argument("--bind", default=f"127.0.0.1:{DEFAULT_PORT}", help="HOST:PORT to listen on (default: loopback)")
    options.add_argument("--token-file", default=None, help=f"the token file (default {default_token_file()}); made if missing")
    options.add_argument("--tls-cert", default=None, help="PEM certificate chain; with --tls-key, TLS on every connection")
    options.add_argument("--tls-key", default=None, help="PEM private key of --tls-cert")
    options.add_argument("--stack", default="node", help="the component stack that runs each client's batches (node, pass:node, ...)")
    options.add_argument("--threads", type=int, default=None, help="threads per client engine (default: the thread budget)")
    options.add_argument("--memory-limit", type=int, default=None, help="bytes of arrays one client may hold (default: half the memory)")
    options.add_argument("--grace", type=float, default=60.0, help="seconds a disconnected client may take to resume")
    options.add_argument("--max-clients", type=int, default=64)
    return options


def build(arguments: argparse.Namespace) -> ProxyServer:
    host, port = parse_address(arguments.bind)
    if (arguments.tls_cert is None) != (arguments.tls_key is None):
        raise ValueError("--tls-cert and --tls-key go together")
    if not is_loopback(host) and arguments.tls_cert is None:
        raise InsecureBind(f"refusing to listen on {host}: a non-loopback address needs TLS (--tls-cert/--tls-key)")
    tls = None
    if arguments.tls_cert is not None:
        tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        tls.load_cert_chain(arguments.tls_cert, arguments.tls_key)
    token = token_for_server(arguments.token_file or default_token_file())
    memory = arguments.memory_limit or psutil.virtual_memory().total // 2
    session = SessionSettings(engine_factory(arguments.stack, arguments.threads), DEFAULT_LIMITS, memory, HEARTBEAT_SECONDS)
    settings = ServerSettings(host, port, token.encode("ascii"), session, tls, arguments.grace, arguments.max_clients)
    return ProxyServer(settings)


def main(argv: Sequence[str]) -> int:
    arguments = parser().parse_args(list(argv))
    logging.basicConfig(level=logging.INFO, format="shoal serve: %(message)s", stream=sys.stderr)
    try:
        server = build(arguments)
    except (InsecureBind, TokenError, ValueError, OSError) as error:
        sys.stderr.write(f"shoal serve: error: {error}\n")
        return 2
    stop = threading.Event()
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        signal.signal(number, lambda *_: stop.set())
    with server:
        host, port = server.address
        token_file = arguments.token_file or default_token_file()
        print(f"shoal serve: listening on {host}:{port} ({'TLS' if arguments.tls_cert else 'no TLS'}); token in {token_file}", flush=True)
        stop.wait()
    print("shoal serve: stopped", flush=True)
    return 0

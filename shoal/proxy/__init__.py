"""The interpreter here, the arrays on a server: Shoal's remote proxy (paper 004).

``shoal serve`` runs a server next to the engine; ``SHOAL_REMOTE=HOST:PORT`` (with
``SHOAL_TOKEN_FILE`` or ``SHOAL_TOKEN``) puts the ``proxy`` component at the bottom of the stack
(``shoal.engine.registry``), which makes ``python -m shoal app.py`` and
``import shoal.numpy`` send their batches there, and :func:`connect` does the same from a
notebook. :func:`preview` returns a small copy of a large array, computed where it lives.
"""

from __future__ import annotations

import ssl
from typing import Any

import numpy as np

from shoal.proxy.auth import TokenError, check_token, read_token_file
from shoal.proxy.client import ClientSettings, ProxyClient, RemoteEngineError, parse_address
from shoal.proxy.preview import downsample
from shoal.proxy.protocol import Reduction

__all__ = ["ProxyClient", "RemoteEngineError", "connect", "make_client", "preview"]


def _tls_context(tls: bool | str | ssl.SSLContext | None) -> ssl.SSLContext | None:
    """``True``: verify with the system's authorities; a path: trust that certificate file."""
    if tls is None or tls is False:
        return None
    if isinstance(tls, ssl.SSLContext):
        return tls
    context = ssl.create_default_context(cafile=None if tls is True else str(tls))
    return context


def make_client(
    address: str, token: str | None = None, token_file: str | None = None, tls: Any = None, compress: bool = True
) -> ProxyClient:
    """A connected client for the server at ``address`` (``HOST:PORT``)."""
    host, port = parse_address(address)
    if token is None:
        if token_file is None:
            raise TokenError("connecting to a Shoal server needs its token: SHOAL_TOKEN_FILE, SHOAL_TOKEN or token=")
        token = read_token_file(token_file)
    return ProxyClient(ClientSettings(host, port, check_token(token), _tls_context(tls), compress=compress))


def connect(address: str, token: str | None = None, *, token_file: str | None = None, tls: Any = None) -> ProxyClient:
    """Send every later array operation of this interpreter to the server at ``address``.

    Arrays created before the call stay with the engine they were made on and must not be
    used afterwards. ``tls``: ``True`` to verify the server with the system's authorities, the
    path of a certificate to trust, or an ``ssl.SSLContext``.
    """
    from shoal import runtime

    client = make_client(address, token, token_file, tls)
    runtime.install(runtime.Runtime(engine=client))
    return client


def preview(array: Any, shape: tuple[int, int] = (512, 512), reduce: str = "mean") -> np.ndarray:
    """A NumPy array of at most ``shape`` along the last two axes, shrunk from ``array`` by
    ``reduce`` (``"mean"``, ``"stride"`` or ``"max"``) where the array lives: on a remote
    server only the small copy travels."""
    try:
        reduction = Reduction[reduce.upper()]
    except KeyError:
        raise ValueError(f"reduce must be 'mean', 'stride' or 'max', got {reduce!r}") from None
    rows, columns = (int(n) for n in shape)
    if rows < 1 or columns < 1:
        raise ValueError(f"shape must be two positive sizes, got {shape!r}")
    from shoal.numpy._lazy import is_lazy

    if is_lazy(array):
        engine = array._base.runtime.engine
        if isinstance(engine, ProxyClient):
            array._base.runtime.flush()
            return engine.preview(array._view, (rows, columns), reduction)
    return downsample(np.asarray(array), (rows, columns), reduction)

"""Tokens: made by ``shoal serve``, kept in files only their owner can read, compared in constant time.

A token is 32 random bytes written as 64 hexadecimal characters (256 bits). ``shoal serve``
reuses the token in its token file when the file is the user's own and private (mode 0600, not a
link), and writes a new one otherwise; the token is never printed or logged. A client sends it
first on every connection and the server compares it with :func:`hmac.compare_digest` before it
parses anything else.
"""

from __future__ import annotations

import hmac
import os
import secrets
import stat
from pathlib import Path

TOKEN_BYTES = 32


class TokenError(ValueError):
    """A token or token file that cannot be used."""


def default_token_file() -> Path:
    """``~/.config/shoal/proxy-token`` (``$XDG_CONFIG_HOME`` when set)."""
    config = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return Path(config) / "shoal" / "proxy-token"


def new_token() -> str:
    return secrets.token_hex(TOKEN_BYTES)


def check_token(token: str) -> bytes:
    """``token`` as the bytes sent on the wire; a clear error if it is too short or not text."""
    token = token.strip()
    if len(token) < 32 or not token.isascii() or not token.isprintable() or " " in token:
        raise TokenError("a Shoal token is at least 32 printable ASCII characters without spaces")
    return token.encode("ascii")


def same_token(received: bytes, expected: bytes) -> bool:
    return hmac.compare_digest(received, expected)


def read_token_file(path: str | os.PathLike) -> str:
    """The token in ``path``, which must be a regular file owned by this user and private."""
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        raise TokenError(f"token file {os.fspath(path)!r} does not exist") from None
    except OSError as error:
        raise TokenError(f"cannot open token file {os.fspath(path)!r} (a link is not followed): {error.strerror}") from None
    with os.fdopen(descriptor, "rb") as file:
        info = os.fstat(file.fileno())
        _check_private(info, os.fspath(path))
        text = file.read(4096).decode("ascii", errors="replace")
    check_token(text)
    return text.strip()


def _check_private(info: os.stat_result, path: str) -> None:
    if not stat.S_ISREG(info.st_mode):
        raise TokenError(f"token file {path!r} is not a regular file")
    if info.st_uid != os.geteuid():
        raise TokenError(f"token file {path!r} belongs to another user (uid {info.st_uid})")
    if info.st_mode & 0o077:
        raise TokenError(f"token file {path!r} can be read by others (mode {stat.S_IMODE(info.st_mode):o}); chmod 600 it")


def token_for_server(path: str | os.PathLike) -> str:
    """The token ``shoal serve`` uses: the one in ``path`` if it is private, else a new one
    written there (mode 0600, created without following links)."""
    path = Path(path)
    if path.exists() or path.is_symlink():
        return read_token_file(path)
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    token = new_token()
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(descriptor, "w") as file:
        file.write(token + "\n")
    return token

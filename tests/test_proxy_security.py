"""The proxy is secure by default: tokens, TLS, loopback binds, private token files."""

from __future__ import annotations

import datetime
import ipaddress
import logging
import os
import signal
import socket
import ssl
import subprocess
import sys
import time

import pytest
from proxy_harness import TOKEN, client_for, live_server

from shoal.proxy import make_client
from shoal.proxy.auth import TokenError, check_token, read_token_file, token_for_server
from shoal.proxy.protocol import PREAMBLE_HEADER, PREAMBLE_MAGIC, PROTOCOL_VERSION, encode_preamble
from shoal.proxy.server import InsecureBind, ProxyServer, ServerSettings
from shoal.proxy.session import SessionSettings

NO_SESSION = bytes(16)


def closed_by_server(sock: socket.socket, timeout: float = 5.0) -> bool:
    """True once the server has closed ``sock`` (after anything it sent last)."""
    sock.settimeout(timeout)
    try:
        while sock.recv(1 << 16):
            pass
    except ConnectionResetError:
        pass
    return True


def raw_connection(server: ProxyServer) -> socket.socket:
    return socket.create_connection(server.address, timeout=5)


def test_a_wrong_token_closes_that_connection_only(caplog):
    caplog.set_level(logging.INFO, logger="shoal.proxy")
    with live_server() as server:
        good = client_for(server)
        with raw_connection(server) as sock:
            sock.sendall(encode_preamble(b"x" * 64, NO_SESSION))
            assert closed_by_server(sock)
        with pytest.raises(ConnectionError, match=r"during the handshake \(a wrong token"):  # not a bare reset
            client_for(server, token="y" * 64)
        good.flush()
        good.shutdown()
    assert "wrong token" in caplog.text
    assert TOKEN not in caplog.text


def test_a_connection_that_never_authenticates_is_closed():
    with live_server(handshake_seconds=0.3) as server, raw_connection(server) as sock:
        started = time.monotonic()
        assert closed_by_server(sock)
        assert time.monotonic() - started < 4


@pytest.mark.parametrize(
    "preamble",
    [
        b"GET / HTTP/1.1\r\n\r\n",
        PREAMBLE_HEADER.pack(PREAMBLE_MAGIC, PROTOCOL_VERSION + 1, 64) + TOKEN.encode() + NO_SESSION,
        PREAMBLE_HEADER.pack(PREAMBLE_MAGIC, PROTOCOL_VERSION, 1 << 30),
        PREAMBLE_HEADER.pack(PREAMBLE_MAGIC, PROTOCOL_VERSION, 64) + TOKEN.encode() + b"\x01" * 16,
    ],
    ids=["http", "version", "huge-token", "unknown-session"],
)
def test_malformed_preambles_are_refused(preamble):
    with live_server() as server, raw_connection(server) as sock:
        sock.sendall(preamble)
        assert closed_by_server(sock)


def test_tokens_must_be_long_and_present(tmp_path):
    with pytest.raises(TokenError, match="at least 32"):
        check_token("short")
    with pytest.raises(TokenError, match="needs its token"):
        make_client("127.0.0.1:1")


def test_the_server_token_file_is_private_and_reused(tmp_path):
    path = tmp_path / "config" / "token"
    token = token_for_server(path)
    assert len(token) == 64 and int(token, 16) >= 0
    assert os.stat(path).st_mode & 0o777 == 0o600 and os.stat(path.parent).st_mode & 0o777 == 0o700
    assert token_for_server(path) == token


def test_token_files_others_can_read_or_links_are_refused(tmp_path):
    shared = tmp_path / "shared"
    shared.write_text("a" * 64)
    shared.chmod(0o640)
    with pytest.raises(TokenError, match="can be read by others"):
        read_token_file(shared)
    private = tmp_path / "private"
    private.write_text("b" * 64)
    private.chmod(0o600)
    link = tmp_path / "link"
    link.symlink_to(private)
    with pytest.raises(TokenError, match="link is not followed"):
        read_token_file(link)
    with pytest.raises(TokenError, match="link is not followed"):
        token_for_server(link)


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_a_token_file_of_another_user_is_refused(tmp_path):
    planted = tmp_path / "planted"
    planted.write_text("c" * 64)
    planted.chmod(0o600)
    os.chown(planted, 65534, 65534)
    with pytest.raises(TokenError, match="belongs to another user"):
        read_token_file(planted)


def test_a_non_loopback_bind_needs_tls():
    session = SessionSettings(lambda: None, None, 1, 1.0)  # type: ignore[arg-type]
    with pytest.raises(InsecureBind, match="needs TLS"):
        ProxyServer(ServerSettings("0.0.0.0", 0, TOKEN.encode(), session))


def self_signed(tmp_path) -> tuple[str, str]:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "localhost")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"), x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
        .sign(key, hashes.SHA256())
    )
    cert, secret = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    secret.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()))
    return str(cert), str(secret)


def test_tls_with_a_self_signed_certificate(tmp_path):
    import numpy as np

    import shoal.numpy as snp
    from shoal import runtime

    cert, key = self_signed(tmp_path)
    server_context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_context.load_cert_chain(cert, key)
    with live_server(tls=server_context) as server:
        trusting = ssl.create_default_context(cafile=cert)
        with runtime.configure(engine=client_for(server, tls=trusting), eager_threshold=0):
            assert float(snp.asarray(np.arange(100.0)).sum()) == 4950.0
        with pytest.raises(ssl.SSLCertVerificationError):
            client_for(server, tls=ssl.create_default_context())
        with pytest.raises(ConnectionError):
            client_for(server)  # plain TCP to a TLS server


def serve(tmp_path, *arguments: str) -> subprocess.Popen:
    environment = {**os.environ, "XDG_CONFIG_HOME": str(tmp_path / "config")}
    return subprocess.Popen(
        [sys.executable, "-m", "shoal", "serve", *arguments],
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.full
def test_shoal_serve_writes_a_private_token_never_prints_it_and_stops_on_sigterm(tmp_path):
    process = serve(tmp_path, "--bind", "127.0.0.1:0")
    try:
        line = process.stdout.readline()
        assert "listening on 127.0.0.1:" in line
        token_file = tmp_path / "config" / "shoal" / "proxy-token"
        token = read_token_file(token_file)
        port = int(line.split("listening on 127.0.0.1:")[1].split()[0])
        client = make_client(f"127.0.0.1:{port}", token_file=str(token_file))
        client.flush()
        client.shutdown()
        process.send_signal(signal.SIGTERM)
        out, err = process.communicate(timeout=20)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert process.returncode == 0
    assert token not in line + out + err


def test_shoal_serve_refuses_an_open_bind_without_tls(tmp_path):
    process = serve(tmp_path, "--bind", "0.0.0.0:0")
    _out, err = process.communicate(timeout=60)
    assert process.returncode == 2
    assert "needs TLS" in err


def test_info_names_the_proxy_and_never_shows_the_token(tmp_path):
    environment = {**os.environ, "SHOAL_REMOTE": "127.0.0.1:9", "SHOAL_TOKEN": TOKEN}
    environment.pop("SHOAL_ENGINE", None)
    environment.pop("SHOAL_STACK", None)
    result = subprocess.run([sys.executable, "-m", "shoal", "info"], env=environment, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "engine stack: proxy" in result.stdout
    assert "SHOAL_TOKEN" in result.stdout and "set (not shown)" in result.stdout
    assert TOKEN not in result.stdout + result.stderr

"""Faults between a program and its proxy server: drops, resumes, lost servers, slow work, Ctrl-C."""

from __future__ import annotations

import dataclasses
import logging
import os
import signal
import socket
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest
from numpy_fixtures import AGAINST_NUMPY
from proxy_harness import TOKEN, client_for, engine, live_server
from terminal_signals import ctrl_c_as_at_a_terminal

from shoal import runtime
from shoal.engine.passthrough import PassConfig, PassThrough
from shoal.proxy.protocol import Kind, encode_preamble
from shoal.proxy.stream import frame_bytes

pytestmark = pytest.mark.skipif(AGAINST_NUMPY, reason="runs the Shoal runtime")


def heat_steps(module, grid, steps: int):
    for _ in range(steps):
        grid[1:-1, 1:-1] = 0.25 * (grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:])
    return grid


def plate(module):
    grid = module.zeros((50, 50))
    grid[0, :] = 100.0
    return grid


def cut(client) -> None:
    """Break the client's connection as a network failure would."""
    client._sock.shutdown(socket.SHUT_RDWR)


def test_a_dropped_connection_resumes_its_session(caplog):
    import shoal.numpy as snp

    caplog.set_level(logging.INFO, logger="shoal.proxy")
    expected = float(heat_steps(np, plate(np), 30).sum())
    with live_server() as server:
        client = client_for(server)
        with runtime.configure(engine=client, eager_threshold=0, flush_threshold=16):
            grid = heat_steps(snp, plate(snp), 10)
            runtime.current().flush()  # sent, not waited for
            cut(client)
            grid = heat_steps(snp, grid, 10)  # sent on a broken connection: kept, sent again
            runtime.current().flush()  # sent, not waited for
            cut(client)
            grid = heat_steps(snp, grid, 10)
            assert float(grid.sum()) == pytest.approx(expected, rel=1e-12)
        assert server.session_count() == 0  # a BYE is answered once its session has ended
    assert "resumed" in caplog.text


def test_after_the_grace_period_the_arrays_are_gone():
    import shoal.numpy as snp

    with live_server(grace_seconds=0.3) as server:
        client = client_for(server, reconnect_seconds=1.0)
        with runtime.configure(engine=client, eager_threshold=0):
            grid = plate(snp)
            runtime.current().flush()  # sent, not waited for
            cut(client)
            time.sleep(1.5)
            with pytest.raises(ConnectionError, match="no longer has this session"):
                float(grid.sum())
            with pytest.raises(ConnectionError, match="no longer has this session"):
                float(grid[0, 0])  # the same error again; the end of the block flushes and closes quietly


def test_a_lost_server_raises_connection_error_at_the_next_read():
    import shoal.numpy as snp

    with live_server() as server:
        client = client_for(server, reconnect_seconds=0.5, timeout=1.0)
        with runtime.configure(engine=client, eager_threshold=0):
            grid = plate(snp)
            runtime.current().flush()  # sent, not waited for
            server.close()
            started = time.monotonic()
            with pytest.raises(ConnectionError, match="lost the Shoal server"):
                float(grid.sum())
            assert time.monotonic() - started < 5


def test_a_server_that_accepts_but_never_answers_times_out():
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    from shoal.proxy.client import ClientSettings, ProxyClient

    started = time.monotonic()
    with pytest.raises(ConnectionError):
        ProxyClient(ClientSettings("127.0.0.1", listener.getsockname()[1], TOKEN.encode(), timeout=0.5))
    assert time.monotonic() - started < 3
    listener.close()


class SlowEngine(PassThrough):
    """The reference engine, taking ``delay`` seconds more for every batch."""

    delay = 1.5

    def __init__(self) -> None:
        super().__init__(PassConfig(asynchronous=False), engine("reference")())

    def execute(self, batch) -> None:
        time.sleep(self.delay)
        super().execute(batch)


def test_heartbeats_keep_a_slow_answer_alive():
    import shoal.numpy as snp

    with live_server(SlowEngine, heartbeat_seconds=0.1) as server:
        client = client_for(server, timeout=10)  # the first handshake may be slow on a loaded machine
        client.settings = dataclasses.replace(client.settings, timeout=0.5)  # then 0.5 s per frame,
        client._sock.settimeout(0.5)  # and the answer, 1.5 s away, lives by its heartbeats alone
        with runtime.configure(engine=client, eager_threshold=0):
            assert float(snp.ones(100).sum()) == 100.0


@pytest.mark.parametrize("sequences", [(2,), (0,), (1, 1), (1, 3)], ids=["gap", "zero", "replayed", "skipped"])
def test_a_frame_out_of_sequence_closes_the_connection(sequences, caplog):
    caplog.set_level(logging.INFO, logger="shoal.proxy")
    with live_server() as server, socket.create_connection(server.address, timeout=5) as sock:
        sock.sendall(encode_preamble(TOKEN.encode(), bytes(16)))
        welcome = sock.recv(1 << 16)
        assert welcome[:4] == b"SHPX"
        frames = [part for sequence in sequences for part in frame_bytes(Kind.SYNC, sequence)]
        sock.sendall(b"".join(bytes(part) for part in frames))
        deadline = time.monotonic() + 5
        data = b""
        while time.monotonic() < deadline:
            chunk = sock.recv(1 << 16)
            if not chunk:
                break
            data += chunk
        assert "out of sequence" in caplog.text


CTRL_C_PROGRAM = """
import numpy as np
grid = np.zeros((2000, 2000))
print("started", flush=True)
for _ in range(100000):
    grid[1:-1, 1:-1] = 0.25 * (grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:])
    float(grid[0, 0])
"""
# Nothing read: the batches queue up at the server (minutes of work), which a goodbye at exit
# waited for (the program ended after minutes, not within the test's 60 s).
CTRL_C_QUEUEING_PROGRAM = """
import numpy as np
a = np.zeros((1500, 1500))
print("started", flush=True)
for _ in range(100000):
    a = np.sin(a) + 1.0
"""


@pytest.mark.full
@pytest.mark.timeout(120)
@pytest.mark.parametrize("source", [CTRL_C_PROGRAM, CTRL_C_QUEUEING_PROGRAM], ids=["reading", "queueing"])
def test_ctrl_c_in_the_program_stops_the_remote_work(tmp_path, source):
    program = tmp_path / "loop.py"
    program.write_text(textwrap.dedent(source))
    with live_server() as server:
        host, port = server.address
        environment = {**os.environ, "SHOAL_REMOTE": f"{host}:{port}", "SHOAL_TOKEN": TOKEN, "SHOAL_EAGER_THRESHOLD": "0"}
        process = subprocess.Popen(
            [sys.executable, "-m", "shoal", str(program)], env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_as_at_a_terminal
        )
        assert process.stdout.readline().strip() == "started"
        time.sleep(1.0)
        assert server.session_count() == 1
        process.send_signal(signal.SIGINT)
        try:
            _out, err = process.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            _out, err = process.communicate()
            pytest.fail(f"the program did not end within 60 s of Ctrl-C; its stderr:\n{err}")
        assert "KeyboardInterrupt" in err
        assert "Exception ignored" not in err  # nothing is sent after the interrupt
        deadline = time.monotonic() + 60  # the server ends the session after the batch in hand
        while server.session_count() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.session_count() == 0


def test_sessions_end_when_their_program_ends():
    import shoal.numpy as snp

    with live_server() as server:
        clients = [client_for(server) for _ in range(3)]
        threads = []
        for client in clients:

            def work(client=client):
                client.flush()

            threads.append(threading.Thread(target=work))
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert server.session_count() == 3
        with runtime.configure(engine=clients[0], eager_threshold=0):
            assert float(snp.ones(10).sum()) == 10.0
        for client in clients[1:]:
            client.shutdown()
        deadline = time.monotonic() + 5
        while server.session_count() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert server.session_count() == 0

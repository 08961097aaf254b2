"""A live proxy server against generated malformed input: nothing crashes it, nothing leaks.

Each input goes over a connection of its own: random bytes, valid preambles with a flipped or
cut byte, wrong tokens, and after a valid handshake frames with random headers, announced
lengths far larger than what follows, unknown kinds, payloads with flipped bytes, cut frames,
random views to fetch and sequence numbers out of order. The connection is then closed from the
client side. Every few hundred inputs a well-behaved client checks a computation, and at the
end every session is gone and the server's thread count is back where it started.
"""

from __future__ import annotations

import random
import socket
import struct
import threading
import time

import numpy as np
import pytest
from proxy_harness import TOKEN, client_for, engine, live_server

from shoal.bytecode import Batch, Const, Instruction, View, dumps, make_attrs
from shoal.bytecode.ir import BaseDecl
from shoal.proxy.protocol import FRAME_HEADER, FRAME_MAGIC, Kind, encode_preamble
from shoal.proxy.stream import frame_bytes

QUICK_INPUTS = 400
FULL_INPUTS = 10_000
CHECK_EVERY = 500
F8 = np.dtype("float64")


def valid_batch(rng: random.Random) -> bytes:
    n = rng.randint(1, 64)
    base = rng.randint(1, 1 << 20)
    view = View(base, F8, 0, (n,), (8,))
    instructions = [
        Instruction("fill", (view,), (Const(1.5),), make_attrs()),
        Instruction("multiply", (view,), (view, Const(2.0)), make_attrs()),
    ]
    return dumps(Batch(bases=[BaseDecl(base, F8, n)], instructions=instructions))


def flipped(data: bytes, rng: random.Random, flips: int = 3) -> bytes:
    data = bytearray(data)
    for _ in range(flips):
        if data:
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
    return bytes(data)


def handshake() -> bytes:
    return encode_preamble(TOKEN.encode(), bytes(16))


def frame(kind: int, sequence: int, payload: bytes) -> bytes:
    return b"".join(bytes(part) for part in frame_bytes(Kind(kind), sequence, [payload])) if kind in Kind._value2member_map_ else (
        FRAME_HEADER.pack(FRAME_MAGIC, kind, 0, sequence, len(payload)) + payload
    )


def generated_input(rng: random.Random) -> bytes:
    """One adversarial input (see the module docstring)."""
    choice = rng.randrange(12)
    if choice == 0:
        return rng.randbytes(rng.randint(0, 200))
    if choice == 1:
        return flipped(handshake(), rng, rng.randint(1, 4))
    if choice == 2:
        return handshake()[: rng.randrange(len(handshake()))]
    if choice == 3:
        return encode_preamble(rng.randbytes(64), bytes(16))
    body = handshake()
    if choice == 4:
        return body + rng.randbytes(rng.randint(1, 100))
    if choice == 5:  # a header announcing far more than follows
        return body + FRAME_HEADER.pack(FRAME_MAGIC, rng.choice([1, 2, 3, 4]), 0, 1, rng.choice([1 << 20, 1 << 33, (1 << 64) - 1])) + rng.randbytes(rng.randint(0, 64))
    if choice == 6:  # unknown or server-side kinds
        return body + frame(rng.choice([0, 7, 31, 32, 33, 35, 36, 999, 65535]), 1, rng.randbytes(rng.randint(0, 32)))
    if choice == 7:  # a valid batch with flipped bytes, then a request
        return body + frame(Kind.EXECUTE, 1, flipped(valid_batch(rng), rng, rng.randint(1, 6))) + frame(Kind.SYNC, 2, b"")
    if choice == 8:  # a cut frame
        whole = frame(Kind.EXECUTE, 1, valid_batch(rng))
        return body + whole[: rng.randrange(len(whole))]
    if choice == 9:  # a random view to fetch
        ndim = rng.randint(0, 5)
        head = struct.pack("<QBBq", rng.randint(0, 1 << 21), rng.randint(0, 20), ndim, rng.randint(-(1 << 62), 1 << 62))
        dims = b"".join(struct.pack("<Q", rng.choice([0, 1, 7, 1 << 40, (1 << 64) - 1])) for _ in range(ndim))
        strides = b"".join(struct.pack("<q", rng.choice([0, 8, -8, 1 << 50, -(1 << 62)])) for _ in range(ndim))
        return body + frame(Kind.EXECUTE, 1, valid_batch(rng)) + frame(Kind.FETCH, 2, head + dims + strides + bytes([rng.randrange(256)]))
    if choice == 10:  # sequence numbers out of order
        return body + frame(Kind.SYNC, rng.choice([0, 2, 5, (1 << 64) - 1]), b"")
    return body + frame(Kind.PREVIEW, 1, rng.randbytes(rng.randint(0, 60)))


def send(address, data: bytes) -> None:
    with socket.create_connection(address, timeout=5) as sock:
        try:
            sock.sendall(data)
            sock.shutdown(socket.SHUT_WR)
            while sock.recv(1 << 16):
                pass
        except OSError:  # the server closed first: what this test wants
            pass


def well_behaved(server) -> None:
    client = client_for(server)
    view = View(1, F8, 0, (10,), (8,))
    client.execute(Batch(bases=[BaseDecl(1, F8, 10)], instructions=[Instruction("fill", (view,), (Const(2.5),), make_attrs())]))
    np.testing.assert_array_equal(client.fetch(view), np.full(10, 2.5))
    client.shutdown()


def fuzz(count: int, seed: int) -> None:
    rng = random.Random(seed)
    threads_before = threading.active_count()
    with live_server(engine("reference"), memory_limit=1 << 24, grace_seconds=0.05, handshake_seconds=0.5, max_clients=100_000) as server:
        for number in range(count):
            send(server.address, generated_input(rng))
            if number % CHECK_EVERY == CHECK_EVERY - 1:
                well_behaved(server)
        well_behaved(server)
        deadline = time.monotonic() + 10
        while (server.session_count() or threading.active_count() > threads_before + 3) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.session_count() == 0
    deadline = time.monotonic() + 10
    while threading.active_count() > threads_before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() <= threads_before


def test_malformed_input_quick():
    fuzz(QUICK_INPUTS, seed=0)


@pytest.mark.full
@pytest.mark.timeout(600)
def test_malformed_input_full():
    fuzz(FULL_INPUTS, seed=1)

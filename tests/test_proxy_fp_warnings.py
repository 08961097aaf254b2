"""NumPy's floating-point warnings and errors for batches that run on a proxy server.

The server notes the conditions each batch met and sends the notes back before its next answer
(``shoal/proxy/notes.py``); the client checks them and warns at the recording lines. Compared
line by line with NumPy: ``fp_warning_program.py`` run with ``SHOAL_REMOTE`` set (a loopback
server in this process), and the in-process cases of ``test_numpy_fp_warnings.py`` on a client.
Malformed notes end the session with an error and warn nothing.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from numpy_fixtures import AGAINST_NUMPY
from proxy_harness import TOKEN, client_for, live_server
from test_numpy_fp_warnings import CASES, FILTERS, MODES, PROGRAM, QUIET, shown

from shoal import runtime
from shoal.engine import fp_notes, fp_signals
from shoal.proxy import notes as proxy_notes
from shoal.proxy.client import RemoteEngineError
from shoal.proxy.protocol import Kind, ProtocolError, server_notes

pytestmark = pytest.mark.skipif(AGAINST_NUMPY, reason="runs the Shoal runtime")

QUICK_RUNS = [
    ("default", "always"),
    ("default", "default"),
    ("errstate-all-raise", "default"),
    ("seterr-all-warn", "error"),
]


def lines(command: list[str], environment: dict[str, str]) -> list[str]:
    result = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=100)
    assert result.returncode == 0, result.stderr[-4000:]
    return [line for line in result.stdout.splitlines() if line[:2] in ("W ", "E ", "ch")]


def assert_program_matches_through_proxy(mode: str, action: str) -> None:
    plain = {key: value for key, value in os.environ.items() if not key.startswith("SHOAL_")}
    expected = lines([sys.executable, str(PROGRAM), mode, action], plain)
    assert (
        any(line.startswith(("W ", "E ")) for line in expected)
        or action == "ignore"
        or mode == "errstate-all-ignore"
    )
    with live_server() as server:
        host, port = server.address
        remote = dict(plain, SHOAL_REMOTE=f"{host}:{port}", SHOAL_TOKEN=TOKEN, SHOAL_VERIFY="1")
        assert (
            lines([sys.executable, "-m", "shoal", str(PROGRAM), mode, action], remote) == expected
        )


@pytest.mark.parametrize(("mode", "action"), QUICK_RUNS)
def test_program_through_the_proxy_warns_as_numpy(mode: str, action: str) -> None:
    assert_program_matches_through_proxy(mode, action)


@pytest.mark.full
@pytest.mark.parametrize(
    ("mode", "action"),
    [(mode, action) for mode in MODES for action in FILTERS if (mode, action) not in QUICK_RUNS],
)
def test_program_through_the_proxy_warns_as_numpy_in_every_mode(mode: str, action: str) -> None:
    assert_program_matches_through_proxy(mode, action)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.__name__)
def test_lazy_operations_on_a_server_warn_as_numpy(case: Callable[[ModuleType], Any]) -> None:
    import shoal.numpy as snp

    expected = shown(case, np)
    with live_server() as server, runtime.configure(engine=client_for(server), eager_threshold=0):
        assert shown(case, snp) == expected
    assert bool(expected) == (case not in QUIET)


def test_warnings_wait_for_the_answer_that_brings_them() -> None:
    """A read served from the client's copy does not give the warnings of batches the server
    has not answered for; the next answer does, in program order."""
    import shoal.numpy as snp

    with live_server() as server:
        client = client_for(server)
        with (
            runtime.configure(engine=client, eager_threshold=0) as installed,
            warnings.catch_warnings(record=True) as caught,
        ):
            warnings.simplefilter("always")
            kept = snp.ones(1 << 12) + 1.0
            np.asarray(kept)
            first = snp.log(snp.zeros(1 << 12))  # signals
            installed.flush()
            trips = client.round_trips
            np.asarray(kept)  # the client's copy
            assert client.round_trips == trips and caught == []
            float(first[0])
        assert [(str(w.message), w.lineno) for w in caught] == [
            ("divide by zero encountered in log", first_line())
        ]


def first_line() -> int:
    import inspect

    source, start = inspect.getsourcelines(test_warnings_wait_for_the_answer_that_brings_them)
    return start + next(n for n, text in enumerate(source) if "# signals" in text)


# ---------------------------------------------------------------- notes from outside the process


@pytest.mark.parametrize(
    ("text", "instructions"),
    [
        (b"0 1 log", 3),  # no final newline
        (b"3 1 log\n", 3),  # past the batch
        (b"-1 1 log\n", 3),
        (b"0 3 log\n", 3),  # two conditions in one bit field
        (b"0 16 log\n", 3),
        (b"0 1 Log\n", 3),  # not one of NumPy's names
        (b"0 1 log; rm -rf\n", 3),
        (b"0 1 " + b"a" * 41 + b"\n", 3),
        (b"00 1 log\n", 3),
        (b"0  1 log\n", 3),
        (b"0 1 log\n\n", 3),
        (b"0 1 l\xc3\xb6g\n", 3),
        (b"99999999999999999999 1 log\n", 3),
        (b"0 1 log\n" * 9, 1),  # more notes than an instruction can have
        (b"0 1 log\n" * 100_000, 1),  # more bytes than the batch allows
    ],
)
def test_malformed_notes_are_refused(text: bytes, instructions: int) -> None:
    with pytest.raises(fp_notes.NotesError):
        fp_notes.decode(text, instructions)


def test_notes_round_trip() -> None:
    notes = [
        (0, "divide by zero encountered in log"),
        (2, "overflow encountered in reduce"),
        (2, "invalid value encountered in scalar divide"),
    ]
    assert fp_notes.decode(fp_notes.encode(notes), 3) == notes
    assert fp_notes.decode(fp_notes.encode(notes + notes), 3) == notes  # each once


def watches_of(
    instructions: int, watched: int
) -> tuple[proxy_notes.RemoteWatches, fp_signals.Watch]:
    from shoal.bytecode import Batch, Instruction

    record = fp_signals.Watch(
        Batch(instructions=[Instruction("release", (), ()) for _ in range(instructions)]), watched
    )
    remote = proxy_notes.RemoteWatches()
    remote.sent(5, record)
    return remote, record


@pytest.mark.parametrize(
    "batches",
    [
        [(6, memoryview(b"0 1 log\n"))],  # a frame that is no batch awaiting notes
        [(5, memoryview(b"0 4 multiply\n"))],  # a condition the batch does not watch
        [(5, memoryview(b"1 1 log\n")), (5, memoryview(b"7 1 log\n"))],  # the second is outside
    ],
)
def test_the_client_refuses_notes_that_do_not_fit_its_batches(
    batches: list[tuple[int, memoryview]],
) -> None:
    remote, record = watches_of(2, fp_signals.DIVIDE | fp_signals.INVALID)
    with pytest.raises((ProtocolError, fp_notes.NotesError)):
        remote.received(batches)
    assert record.notes == [] and not record.done  # nothing of a refused frame is used
    remote.received([(5, memoryview(b"1 1 log\n"))])
    remote.answered(6)
    assert record.done and [message for _, message in record.notes] == [
        "divide by zero encountered in log"
    ]


def test_a_server_sending_malformed_notes_ends_the_session(monkeypatch: pytest.MonkeyPatch) -> None:
    import shoal.numpy as snp

    monkeypatch.setattr(
        proxy_notes.ServerNotes,
        "frame_payload",
        lambda self: server_notes([(1 << 40, b"0 1 log\n")]),
    )
    with live_server() as server, runtime.configure(engine=client_for(server), eager_threshold=0):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            result = snp.log(snp.zeros(1 << 12))
            with pytest.raises(ConnectionError, match="malformed floating-point notes"):
                float(result[0])
        assert caught == []


def test_an_execute_frame_with_unknown_flags_is_rejected() -> None:
    from shoal.bytecode import Batch, dumps

    with live_server() as server:
        client = client_for(server)
        try:
            with client._lock:
                client._send(Kind.EXECUTE, [dumps(Batch())], 0x10)
                client._unsynced = True
            with pytest.raises(RemoteEngineError, match="flags 0x10"):
                client.flush()
        finally:
            client.shutdown()


def test_a_servers_sessions_run_one_batch_at_a_time() -> None:
    """The notes of the batch running are process-wide: on a server, whose sessions run their
    engines on threads of their own, a second batch waits for the first to end."""
    import threading

    from shoal.bytecode import Batch

    with live_server() as server:
        client_for(server).shutdown()  # a session makes the server run one batch at a time
    first_in, let_go, second_in = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        with fp_signals.running(Batch()):
            first_in.set()
            let_go.wait(10)

    def second() -> None:
        first_in.wait(10)
        with fp_signals.running(Batch()):
            second_in.set()

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    assert first_in.wait(10)
    assert not second_in.wait(0.2)  # waits for the first batch
    let_go.set()
    for thread in threads:
        thread.join(10)
    assert second_in.is_set()

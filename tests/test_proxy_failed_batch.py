"""A batch that fails on a server does not stop the session: a program that catches the error
goes on with every array it made, as under plain ``python`` and locally.

The server's session had forgotten every base of a batch that failed while the engine ran it
(the engine keeps them), so the next batch naming one ("neither declared nor known") was
rejected; a batch the server's verification refused lost all its bases where the runtime runs
what verifies in parts (``shoal/salvage.py``). Checked in this process through a client, and by
``caught_errors_program.py`` under ``python``, ``python -m shoal`` and ``python -m shoal`` with
``SHOAL_REMOTE`` set (a loopback server in this process).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from numpy_fixtures import AGAINST_NUMPY
from proxy_harness import TOKEN, client_for, live_server

from shoal import runtime
from shoal.bytecode import BaseDecl, Batch, Instruction, View, make_attrs
from shoal.proxy.client import RemoteEngineError

pytestmark = pytest.mark.skipif(AGAINST_NUMPY, reason="runs the Shoal runtime")

PROGRAM = Path(__file__).resolve().parent / "caught_errors_program.py"
N = 1 << 14
F8 = np.dtype(np.float64)


def goes_on(xp, name: str) -> list[float]:
    """Work before a failing call (in its batch), the error caught, then work on every array."""
    a = xp.arange(N) * 1.0
    k = a * 3.0
    singular = xp.ones((64, 64)) * 2.0
    indefinite = -xp.eye(64) * 2.0
    calls = {
        "inv": lambda: xp.linalg.inv(singular),
        "solve": lambda: xp.linalg.solve(singular, k[:64]),
        "cholesky": lambda: xp.linalg.cholesky(indefinite),
    }
    with pytest.raises(np.linalg.LinAlgError):
        calls[name]()
    later = k + a
    k += later
    fixed = xp.linalg.pinv(singular)
    return [float(k.sum()), float(later.sum()), float(a[7]), float(singular.sum()), float(indefinite.trace()), float(fixed.sum())]


@pytest.mark.parametrize("name", ["inv", "solve", "cholesky"])
def test_a_program_that_catches_a_linalg_error_on_a_server_goes_on(name: str) -> None:
    import shoal.numpy as snp

    expected = goes_on(np, name)
    with live_server() as server, runtime.configure(engine=client_for(server), eager_threshold=0):
        assert goes_on(snp, name) == pytest.approx(expected, rel=1e-12)
        assert goes_on(snp, name) == pytest.approx(expected, rel=1e-12)  # and again, in the same session


def test_a_batch_the_server_refuses_runs_again_in_parts() -> None:
    """An instruction the server's verification refuses (it names a base this client never
    declared) is left out; the work sent with it runs, and the refusal is the error the client
    reads next."""
    whole = lambda base: View(base, F8, 0, (N,), (8,))  # noqa: E731
    batch = Batch(
        bases=[BaseDecl(1, F8, N), BaseDecl(2, F8, N), BaseDecl(3, F8, N)],
        data={1: np.arange(N, dtype=F8)},
        instructions=[
            Instruction("add", (whole(2),), (whole(1), whole(1))),
            Instruction("add", (whole(3),), (whole(99), whole(1))),
            Instruction("multiply", (whole(1),), (whole(1), whole(2))),
        ],
    )
    with live_server() as server:
        client = client_for(server)
        try:
            client.execute(batch)
            with pytest.raises(RemoteEngineError, match="base 99"):
                client.fetch(whole(2))
            np.testing.assert_array_equal(client.fetch(whole(2)), np.arange(N) * 2.0)
            np.testing.assert_array_equal(client.fetch(whole(1)), np.arange(N) * np.arange(N) * 2.0)
            client.execute(Batch(instructions=[Instruction("release", (), (), make_attrs(base=b)) for b in (1, 2, 3)]))
            client.flush()
        finally:
            client.shutdown()


def run(command: list[str], environment: dict[str, str]) -> tuple[int, str]:
    result = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=120)
    return result.returncode, result.stdout + result.stderr[-3000:] * (result.returncode != 0)


def test_the_caught_errors_program_prints_numpys_output_locally_and_through_a_server() -> None:
    plain = {key: value for key, value in os.environ.items() if not key.startswith("SHOAL_")}
    expected = run([sys.executable, str(PROGRAM)], plain)
    assert expected[0] == 0 and expected[1].count("caught ") == 10
    lazy = dict(plain, SHOAL_EAGER_THRESHOLD="0", SHOAL_SETTLED_THRESHOLD="0", SHOAL_COMPILE="off")
    assert run([sys.executable, "-m", "shoal", str(PROGRAM)], lazy) == expected
    with live_server() as server:
        host, port = server.address
        remote = dict(lazy, SHOAL_REMOTE=f"{host}:{port}", SHOAL_TOKEN=TOKEN)
        assert run([sys.executable, "-m", "shoal", str(PROGRAM)], remote) == expected

"""Ctrl-C while the node engine runs a long batch: the first waits for the batch (and says so),
a second stops it at once; its arrays are then lost, and reading one raises ``LostWork``."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from terminal_signals import ctrl_c_as_at_a_terminal

LOOP = """
import numpy as np
a = np.zeros((1500, 1500))
print("started", flush=True)
try:
    for _ in range(100000):  # minutes of work, in batches of seconds
        a = np.sin(a) + 1.0
except KeyboardInterrupt:
    print("caught", flush=True)
    try:
        print(float(a[0, 0]))
    except Exception as error:
        print(type(error).__name__, flush=True)
    raise
"""


def interrupted(tmp_path: Path, presses: int) -> subprocess.CompletedProcess[str]:
    """The loop run by ``python -m shoal``, Ctrl-C pressed ``presses`` times (0.2 s
    apart) two seconds after it started."""
    program = tmp_path / "loop.py"
    program.write_text(textwrap.dedent(LOOP))
    environment = {**os.environ, "SHOAL_COMPILE": "off"}
    process = subprocess.Popen(
        [sys.executable, "-m", "shoal", str(program)], env=environment, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=ctrl_c_as_at_a_terminal
    )
    try:
        assert process.stdout is not None and process.stdout.readline().strip() == "started"
        time.sleep(2.0)
        for _ in range(presses):
            process.send_signal(signal.SIGINT)
            time.sleep(0.2)
        out, err = process.communicate(timeout=90)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    return subprocess.CompletedProcess(process.args, process.returncode, "started\n" + out, err)


@pytest.mark.timeout(150)
def test_a_second_ctrl_c_stops_the_batch_and_its_arrays_are_lost(tmp_path: Path) -> None:
    result = interrupted(tmp_path, presses=2)
    assert result.returncode == -signal.SIGINT, result.stderr
    assert result.stdout.splitlines()[1:] == ["caught", "LostWork"], result.stdout + result.stderr
    lines = result.stderr.splitlines()
    assert lines[0] == "shoal: Ctrl-C: the work in hand finishes first; Ctrl-C again stops it (the arrays it computes are then lost)"
    assert lines[-1] == "KeyboardInterrupt"  # the program's, at its line
    assert 'loop.py", line 7, in <module>' in result.stderr


@pytest.mark.full
@pytest.mark.timeout(150)
def test_one_ctrl_c_waits_for_the_batch_and_the_arrays_are_whole(tmp_path: Path) -> None:
    result = interrupted(tmp_path, presses=1)
    assert result.returncode == -signal.SIGINT, result.stderr
    caught, value = result.stdout.splitlines()[1:]
    assert caught == "caught"
    iterate, iterates = np.zeros(8), set()
    for _ in range(100):  # NumPy's iterates of sin(a) + 1 from 0 (they settle long before 100)
        iterate = np.sin(iterate) + 1.0
        iterates.add(float(iterate[0]))
    assert float(value) in iterates  # whole iterations, not a batch stopped halfway
    assert result.stderr.splitlines()[-1] == "KeyboardInterrupt"

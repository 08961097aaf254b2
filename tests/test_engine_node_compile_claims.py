"""Claims on kernels being compiled: exclusive, removed on release, stale once the holder died."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from shoal.engine.node.compile.claims import claim, claim_path, remove_stale, try_claim


def test_a_claim_is_exclusive_and_leaves_no_file_once_released(tmp_path):
    path = claim_path(tmp_path / "shoal_kernel_abc.py")
    first = try_claim(path)
    assert first is not None and path.exists()
    assert try_claim(path) is None  # flock: a second open file description is refused
    assert remove_stale(tmp_path) == 0  # held: not stale
    first.release()
    first.release()
    assert not path.exists()
    again = try_claim(path)
    assert again is not None
    again.release()
    assert not list(tmp_path.iterdir())


def test_a_waiter_whose_file_was_released_under_it_claims_the_path_anew(tmp_path):
    """The holder removes the file the waiter has open: the lock the waiter then gets is on a
    removed file, which claims nothing, so it must claim the path again."""
    path = claim_path(tmp_path / "shoal_kernel_abc.py")
    holder = try_claim(path)
    assert holder is not None
    got = []
    waiter = threading.Thread(target=lambda: got.append(claim(path)))
    waiter.start()
    while not any(str(path) == os.path.realpath(f"/proc/self/fd/{fd}") for fd in _descriptors() if fd != holder.descriptor):
        time.sleep(0.01)  # the waiter has the file open and waits for its lock
    holder.release()
    waiter.join()
    (claimed,) = got
    try:
        assert path.exists() and os.fstat(claimed.descriptor).st_ino == os.stat(path).st_ino
        assert try_claim(path) is None
    finally:
        claimed.release()
    assert not path.exists()


def _descriptors() -> list[int]:
    return [int(name) for name in os.listdir("/proc/self/fd")]


@pytest.mark.full
def test_the_claim_of_a_killed_holder_is_stale_and_removed(tmp_path):
    path = claim_path(tmp_path / "shoal_kernel_abc.py")
    code = (
        "import sys, time\nfrom pathlib import Path\nfrom shoal.engine.node.compile.claims import try_claim\n"
        f"held = try_claim(Path({str(path)!r}))\nprint(held is not None, flush=True)\ntime.sleep(600)\n"
    )
    holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "True"
        assert try_claim(path) is None and remove_stale(tmp_path) == 0
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        holder.stdout.close()
    assert path.exists()  # a killed holder cannot remove its file ...
    assert remove_stale(tmp_path) == 1  # ... but its lock died with it
    assert not path.exists()

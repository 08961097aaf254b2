"""The runtime around ``os.fork`` (``shoal/forks.py``), in this process: a child of a runtime
whose component keeps its arrays elsewhere gets the values of the fork on an engine of its own;
one whose values could not be fetched refuses array work instead of computing on garbage."""

from __future__ import annotations

import os

import numpy as np
import pytest
from numpy_fixtures import AGAINST_NUMPY

import shoal.numpy as snp
from shoal import runtime
from shoal.engine.passthrough import PassConfig, PassThrough
from shoal.engine.reference import ReferenceEngine

pytestmark = pytest.mark.skipif(AGAINST_NUMPY, reason="runs the Shoal runtime")


def in_child(work) -> str:
    """``work()``'s text (or its error's) as computed in a forked child, which then ends."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            try:
                text = str(work())
            except Exception as error:
                text = f"{type(error).__name__}: {error}"
            os.write(write, text.encode())
        finally:
            os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    return b"".join(chunks).decode()


class Elsewhere(PassThrough):
    """A component that is not in this process, as a server or the ranks are."""

    def __init__(self, fails: bool = False) -> None:
        super().__init__(PassConfig(asynchronous=False), ReferenceEngine())
        self.fails = fails
        self.fetches = 0

    def fetch(self, view):
        self.fetches += 1
        if self.fails:
            raise ConnectionError("the server went away")
        return super().fetch(view)

    def forked(self):
        self.inner = None  # the child must not use it
        return None


def test_a_child_computes_on_the_values_of_the_fork_and_its_writes_stay_its_own():
    engine = Elsewhere()
    with runtime.configure(engine=engine, eager_threshold=0):
        a = snp.arange(1000.0)
        b = a * 2  # recorded, not run, at the fork

        def work():
            b[:10] = -1.0
            return float((b + a).sum())

        expected = np.arange(1000.0) * 2
        expected[:10] = -1.0
        assert in_child(work) == str(float((expected + np.arange(1000.0)).sum()))
        assert in_child(lambda: float(b[:10].sum())) == "90.0"  # the first child's write is its own
        assert engine.fetches == 2  # one fetch of each live base, shared by both forks
        b += 1  # a batch runs: the next fork fetches again
        assert in_child(lambda: float(b[:3].sum())) == "9.0"
        assert engine.fetches == 4
        assert float(b[:10].sum()) == 100.0


def test_a_child_whose_values_could_not_be_fetched_refuses_to_compute():
    with runtime.configure(engine=Elsewhere(fails=True), eager_threshold=0):
        a = snp.arange(1000.0) + 1
        text = in_child(lambda: float(a.sum()))
        assert text.startswith("EngineError: this process was forked while its arrays could not be fetched")
        assert "the server went away" in text
        with pytest.raises(ConnectionError):
            float(a.sum())


def test_a_child_of_an_in_process_engine_keeps_it():
    with runtime.configure(engine=ReferenceEngine(), eager_threshold=0):
        a = snp.arange(1000.0)
        b = a * 2
        assert in_child(lambda: float((b - a).sum())) == str(float(np.arange(1000.0).sum()))
        assert float(b.sum()) == 2 * float(np.arange(1000.0).sum())

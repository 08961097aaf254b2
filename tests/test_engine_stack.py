"""The component contract: stacks spelled by name, asynchronous batches, release as an instruction.

The differential suites also run through ``pass:node`` and ``pass:reference`` (``numpy_fixtures``,
``engine_node_harness``); these tests pin the contract itself.
"""

from __future__ import annotations

import subprocess
import sys
import threading

import numpy
import pytest
from engine_node_recorder import Recorder

import shoal
import shoal.numpy as snp
from shoal import runtime
from shoal.engine import Component, EngineError, ReferenceEngine, create, register, stack_names
from shoal.engine.node import NodeConfig, NodeEngine
from shoal.engine.passthrough import PassConfig, PassThrough


class Gate(Component):
    """A bottom component whose batches wait for ``open`` (to see ``execute`` return first)."""

    name = "gate"

    def __init__(self, config: object = None) -> None:
        self.inner = ReferenceEngine()
        self.open = threading.Event()
        self.ran = 0

    @classmethod
    def configure(cls, environ=None) -> None:
        return None

    def execute(self, batch) -> None:
        assert self.open.wait(30)
        self.inner.execute(batch)
        self.ran += 1

    def fetch(self, view):
        return self.inner.fetch(view)

    def shutdown(self) -> None:
        self.inner.shutdown()


def failing_batches() -> tuple[Recorder, object]:
    """A batch that passes verification but fails when it runs: its second instruction gathers
    from an index out of bounds."""
    rec = Recorder(first_id=1 << 30)
    a = rec.array(numpy.arange(10.0))
    b = rec.ufunc("add", a, 1.0)
    index = rec.array(numpy.array([3, 99]))
    out = rec.empty((2,), numpy.float64)
    rec.emit("gather", (out,), (b, index), key=(("array", 0),))
    return rec, out


def test_a_stack_is_spelled_top_first_and_a_middle_layer_gets_the_engine_below(monkeypatch):
    monkeypatch.delenv("SHOAL_STACK", raising=False)
    monkeypatch.delenv("SHOAL_ENGINE", raising=False)
    assert stack_names() == ["node"]
    assert stack_names("pass:reference") == ["pass", "reference"]
    assert stack_names("pass") == ["pass", "node"]
    monkeypatch.setenv("SHOAL_ENGINE", "reference")
    assert stack_names() == ["reference"]
    monkeypatch.setenv("SHOAL_STACK", "pass")
    assert stack_names() == ["pass", "reference"]
    monkeypatch.setenv("SHOAL_STACK", "pass:pass")
    assert stack_names() == ["pass", "pass", "reference"]


@pytest.mark.parametrize(
    ("stack", "engine", "message"),
    [
        ("node:pass", "", "'node' is a bottom component"),
        ("pass::node", "", "spelled name:name"),
        ("pass:nope", "", "unknown Shoal engine 'nope'"),
        ("pass:node", "reference", "SHOAL_ENGINE names 'reference'"),
    ],
)
def test_a_wrong_stack_is_a_clear_error(monkeypatch, stack, engine, message):
    monkeypatch.setenv("SHOAL_STACK", stack)
    monkeypatch.setenv("SHOAL_ENGINE", engine)
    with pytest.raises(ValueError, match=message):
        runtime.Runtime()


def test_a_stack_is_built_with_each_component_configured():
    engine = create("pass:node", {"node": NodeConfig(threads=1, block_size=64), "pass": PassConfig(asynchronous=False)})
    try:
        assert isinstance(engine, PassThrough) and not engine.config.asynchronous
        assert isinstance(engine.inner, NodeEngine)
        assert engine.inner.block_elements == 64 and engine.inner.threads == 1
    finally:
        engine.shutdown()


def test_components_are_loaded_when_first_named():
    code = (
        "import sys\nfrom shoal.engine import create\ncreate('pass:reference').shutdown()\n"
        "print('shoal.engine.node' in sys.modules, 'shoal.engine.passthrough' in sys.modules)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["False", "True"]


def test_a_registered_class_stacks_by_its_name():
    register("gate", Gate)
    engine = create("pass:gate")
    try:
        assert isinstance(engine.inner, Gate)
    finally:
        engine.inner.open.set()
        engine.shutdown()


def test_release_is_an_instruction_only():
    for kind in (Component, ReferenceEngine, NodeEngine, PassThrough):
        assert not hasattr(kind, "release")


def test_execute_returns_before_the_batch_has_run_and_fetch_waits_for_it():
    gate = Gate()
    engine = PassThrough(PassConfig(), gate)
    try:
        rec = Recorder()
        a = rec.array(numpy.arange(5.0))
        b = rec.ufunc("multiply", a, 2.0)
        engine.execute(rec.new_batch())
        assert gate.ran == 0
        gate.open.set()
        numpy.testing.assert_array_equal(engine.fetch(b), numpy.arange(5.0) * 2)
        assert gate.ran == 1
    finally:
        gate.open.set()
        engine.shutdown()


@pytest.mark.parametrize("where", ["fetch", "flush", "shutdown", "live_bases"])
@pytest.mark.parametrize("bottom", [ReferenceEngine, lambda: NodeEngine(NodeConfig(threads=2, compile="off"))])
def test_an_asynchronous_failure_surfaces_at_the_next_call_as_an_engine_error(where, bottom):
    engine = PassThrough(PassConfig(), bottom())
    rec, _ = failing_batches()
    engine.execute(rec.new_batch())
    later = rec.array(numpy.ones(3))
    engine.execute(rec.new_batch())  # queued behind the failed batch: runs all the same
    call = {"fetch": lambda: engine.fetch(later), "flush": engine.flush, "shutdown": engine.shutdown, "live_bases": engine.live_bases}
    with pytest.raises(EngineError, match=r"batch 1, run after execute returned: IndexError") as raised:
        call[where]()
    assert isinstance(raised.value.__cause__, IndexError)
    if bottom is ReferenceEngine:
        assert "in instruction 1: gather" in str(raised.value)
    if where != "shutdown":  # raised once: the component goes on
        numpy.testing.assert_array_equal(engine.fetch(later), numpy.ones(3))
        engine.shutdown()


def test_the_reference_engine_names_the_failing_instruction():
    engine = ReferenceEngine()
    rec, _ = failing_batches()
    with pytest.raises(IndexError) as raised:
        engine.execute(rec.new_batch())
    (note,) = raised.value.__notes__
    assert note.startswith("in instruction 1: gather ")


def test_a_batch_that_fails_verification_surfaces_with_the_instruction_the_verifier_names():
    engine = PassThrough(PassConfig(), ReferenceEngine())
    rec = Recorder(first_id=1 << 30)
    a = rec.array(numpy.arange(4.0))
    rec.release(a)
    rec.ufunc("add", a, 1.0)
    engine.execute(rec.new_batch())
    with pytest.raises(EngineError, match=r"BytecodeError: instruction 1 \(add\)"):
        engine.flush()
    engine.shutdown()


def test_numpy_errors_still_come_from_the_users_line_through_an_asynchronous_stack():
    with runtime.configure(engine="pass:node", eager_threshold=0, flush_threshold=8):
        a = snp.arange(10.0)
        with pytest.raises(ValueError, match="could not be broadcast"):
            _ = a + snp.ones(3)
        with pytest.raises(IndexError):
            _ = a[20]
        b = a * 2
        shoal.flush()
        assert float(b.sum()) == 90.0


def test_an_asynchronous_failure_is_raised_by_shoal_flush(monkeypatch):
    with runtime.configure(engine="pass:reference", eager_threshold=0) as rt:
        a = snp.arange(4.0)
        rec, _ = failing_batches()
        rt.engine.execute(rec.new_batch())  # bases of the recorder's own: a batch that fails
        with pytest.raises(EngineError, match="run after execute returned"):
            shoal.flush()
        numpy.testing.assert_array_equal(numpy.asarray(a + 1), numpy.arange(4.0) + 1)


def test_a_program_runs_through_shoal_stack_from_the_environment(tmp_path):
    program = tmp_path / "program.py"
    program.write_text("import numpy as np\na = np.arange(1000.0)\nprint(float((a * 2).sum()))\n")
    environment = {"SHOAL_STACK": "pass:node", "SHOAL_EAGER_THRESHOLD": "0", "SHOAL_COMPILE": "off"}
    import os

    done = subprocess.run([sys.executable, "-m", "shoal", str(program)], capture_output=True, text=True, env={**os.environ, **environment}, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "999000.0"

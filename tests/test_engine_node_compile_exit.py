"""Closing the engine while a kernel compiles: the worker finishes the work alone (or is waited
for, or killed, as asked), then exits, leaving the kernels and nothing else in the cache.

Another compiler's claim, held by the test, keeps a kernel "being compiled" for as long as a test
needs, so nothing here depends on how long compiling takes.
"""

from __future__ import annotations

import numpy as np
import psutil
import pytest
from compile_exit_helpers import (
    hold_claim,
    leftovers,
    libraries,
    wait_gone,
    wait_until,
    waits_for_a_claim,
)
from engine_node_harness import node_engine
from engine_node_recorder import Recorder
from test_engine_node_compiled import square_roots

from shoal.engine.node import NodeConfig, NodeEngine
from shoal.engine.node.compile import costs as compile_costs
from shoal.engine.node.compile import kernel_cache as compiler

pytest.importorskip("numba")
pytestmark = pytest.mark.full


@pytest.fixture(scope="module")
def roots_module(tmp_path_factory) -> str:
    """The file name of the kernel module of ``square_roots``, compiled once in a scratch cache."""
    scratch = tmp_path_factory.mktemp("kernel-names")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SHOAL_CACHE_DIR", str(scratch))
        engine = node_engine(block=64, compile="sync")
        try:
            square_roots(engine, 0.25)
        finally:
            engine.shutdown()
    (module,) = (scratch / "kernels").glob("shoal_kernel_*.py")
    return module.name


@pytest.fixture
def kernels(monkeypatch, tmp_path):
    """An empty kernel cache, and kernels queued for the worker as soon as they are seen."""
    monkeypatch.setenv("SHOAL_CACHE_DIR", str(tmp_path))
    monkeypatch.setattr(compiler, "estimated_compile_seconds", lambda *args, **kwargs: 0.0)
    return tmp_path / "kernels"


def background_engine(exit_mode: str = "detach") -> NodeEngine:
    return NodeEngine(NodeConfig(threads=2, block_size=64, compile="background", direct_work=0, compile_exit=exit_mode))


def the_worker() -> psutil.Process:
    wait_until(lambda: len(psutil.Process().children()) == 1, "the compile worker starts")
    (worker,) = psutil.Process().children()
    return worker


def scaled_roots(engine, scale):
    rec = Recorder(first_id=int(scale * 1000) + 500)
    a = rec.array(np.arange(1000.0))
    out = rec.ufunc("sqrt", rec.ufunc("multiply", a, scale))
    engine.execute(rec.new_batch())
    np.testing.assert_allclose(engine.fetch(out), np.sqrt(np.arange(1000.0) * scale))


def closed_while_its_kernel_is_claimed(kernels, roots_module, exit_mode: str = "detach", then=None):
    """Start a kernel's compilation while another holder has its claim, run ``then(engine)`` if
    given, and close the engine: returns the claim held and the compile worker."""
    held = hold_claim(kernels, roots_module)
    engine = background_engine(exit_mode)
    try:
        square_roots(engine, 0.25)
        worker = the_worker()
        wait_until(lambda: waits_for_a_claim(worker), "the worker waits for the kernel's claim")
        if then is not None:
            then(engine)
    finally:
        engine.shutdown()  # returns while the kernel cannot even start compiling
    return held, worker


def test_closing_leaves_the_kernel_being_compiled_to_the_worker_which_finishes_it_alone(kernels, roots_module, monkeypatch):
    held, worker = closed_while_its_kernel_is_claimed(kernels, roots_module)  # the worker must wait
    assert worker.is_running() and not libraries(kernels)
    held.release()
    wait_gone([worker])
    assert [path.stem for path in libraries(kernels)] == [roots_module.removesuffix(".py")]
    assert not leftovers(kernels)
    assert compile_costs.load(kernels) != compile_costs.CompileCosts()  # it measured and remembered
    monkeypatch.setattr(compiler, "NUMPY_SECONDS_PER_ELEMENT_STEP", 1e-3)  # worth loading at once
    later = background_engine()
    try:
        stats = square_roots(later, 0.5)
        assert stats.compiled_block_ops == stats.block_ops  # the next run finds it compiled
    finally:
        later.shutdown()
    assert not psutil.Process().children()


def test_closing_in_wait_mode_returns_once_the_worker_has_compiled_and_exited(kernels, roots_module):
    engine = background_engine("wait")
    try:
        square_roots(engine, 0.25)
    finally:
        engine.shutdown()
    assert not psutil.Process().children()
    assert [path.name for path in kernels.glob("shoal_kernel_*.so")] == [roots_module.replace(".py", ".so")]
    assert not leftovers(kernels)


def test_closing_in_kill_mode_drops_the_work_and_leaves_other_claims_alone(kernels, roots_module):
    held, _worker = closed_while_its_kernel_is_claimed(kernels, roots_module, "kill")
    assert not psutil.Process().children()
    assert held.path.exists()  # a claim whose holder lives is not stale
    held.release()
    assert not libraries(kernels) and not leftovers(kernels)


@pytest.mark.parametrize(("budget", "compiled"), [(30.0, 2), (0.0, 1)])
def test_queued_kernels_go_to_the_worker_within_the_estimated_compile_time_it_may_take(kernels, roots_module, monkeypatch, budget, compiled):
    monkeypatch.setattr(compiler, "DETACHED_WORK_SECONDS", budget)
    queue_another = lambda engine: scaled_roots(engine, 0.5)  # noqa: E731  (queued behind the first)
    held, worker = closed_while_its_kernel_is_claimed(kernels, roots_module, then=queue_another)
    held.release()
    wait_gone([worker])
    assert len(libraries(kernels)) == compiled
    assert not leftovers(kernels)


def test_a_detached_worker_that_cannot_finish_exits_at_its_deadline(kernels, roots_module, monkeypatch):
    monkeypatch.setattr(compiler, "DETACHED_GRACE_SECONDS", 0.5)
    monkeypatch.setattr(compiler, "DETACHED_LIMIT_FACTOR", 0.0)
    held, worker = closed_while_its_kernel_is_claimed(kernels, roots_module)  # never released while the worker lives
    wait_gone([worker])
    assert held.path.exists()  # it gave up; the living claim is left to its holder
    held.release()
    assert not libraries(kernels) and not leftovers(kernels)

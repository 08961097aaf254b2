"""A node engine on several threads limits the libraries' thread pools (BLAS) to one thread while
it runs a batch that may call them, and only then (``shoal.engine.node.engine.calls_library_pools``):
the first limit in a process finds the libraries loaded in it, which costs about 2 ms."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from fp_engines import blocked_engine
from numpy_fixtures import needs_runtime
from threadpoolctl import ThreadpoolController

from shoal.bytecode import Batch, Const, Instruction, View
from shoal.engine.node import engine as engine_module
from shoal.engine.node.engine import calls_library_pools


@pytest.fixture
def limits(monkeypatch: pytest.MonkeyPatch) -> list[list[int]]:
    """Per limit the node engine entered, the BLAS pools' thread counts inside it."""
    entered: list[list[int]] = []
    real = engine_module.limit_library_threads

    @contextmanager
    def recording(n_threads: int) -> Iterator[int]:
        with real(n_threads) as applied:
            entered.append([library.num_threads for library in ThreadpoolController().select(user_api="blas").lib_controllers])
            yield applied

    monkeypatch.setattr(engine_module, "limit_library_threads", recording)
    return entered


def smoothed(xp: ModuleType) -> Any:
    a = xp.linspace(0.0, 1.0, 8192)
    return (a[:-2] + a[1:-1] * 2.0 + a[2:]) / 4.0


def product(xp: ModuleType) -> Any:
    m = xp.arange(96.0 * 96).reshape(96, 96) / 1000.0
    return (m @ m + 1.0).sum(axis=0)


def test_element_wise_batches_leave_the_libraries_alone_and_products_run_with_one_blas_thread(limits: list[list[int]]) -> None:
    needs_runtime()
    import shoal.numpy as snp
    from shoal import runtime

    with runtime.configure(engine=blocked_engine("off"), eager_threshold=0, settled_threshold=0):
        got = np.asarray(smoothed(snp))
        assert limits == []
        got_product = np.asarray(product(snp))
    np.testing.assert_array_equal(got, smoothed(np))
    np.testing.assert_allclose(got_product, product(np), rtol=1e-13)
    assert limits, "the product's batch ran without limiting the libraries"
    assert all(threads == [1] * len(threads) for threads in limits), limits


def _batch(op: str, dtype: str) -> Batch:
    view = View(1, np.dtype(dtype), 0, (4,), (np.dtype(dtype).itemsize,))
    return Batch([], {}, [Instruction(op, (view,), (view, Const(1)))])


@pytest.mark.parametrize(
    ("op", "dtype", "calls"),
    [("add", "float64", False), ("sqrt", "complex128", False), ("add", "object", True), ("matmul", "float64", True), ("dot", "float32", True)],
)
def test_which_instructions_may_call_a_library_pool(op: str, dtype: str, calls: bool) -> None:
    assert calls_library_pools(_batch(op, dtype)) is calls

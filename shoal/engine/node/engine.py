"""The node engine: blocks, per-block dependency lists, fused kernels, a thread pool.

``execute`` plans a batch (fusion groups, whole-view operations, releases), turns the plan into
block operations with reference counts, and runs the ready queue on the pool. It returns when
the batch is done, so ``fetch`` reads finished data.

Settings (``Config`` first, the environment overrides):

* block size: ``Config.block_size`` or ``SHOAL_BLOCK_SIZE``, in **elements** of each base's
  dtype; base-blocks and view-blocks both have about this many elements.
* threads: ``Config.threads``; ``Config.options["threads"]`` or ``SHOAL_NUM_THREADS`` override.
* compilation: ``Config.options["compile"]`` or ``SHOAL_COMPILE`` = ``background`` (default),
  ``sync`` or ``off``.
* direct execution: ``Config.options["direct_work"]`` or ``SHOAL_DIRECT_WORK``, element operations
  below which a batch runs instruction by instruction without blocks (default 2**23; 0 = never);
  so does a batch whose instructions average under 1/4 of it, and a lone element-wise
  instruction under 1/64 of it runs whole instead of as a kernel.
"""

from __future__ import annotations

import os
import time

import numpy as np

from shoal.bytecode import Batch, View
from shoal.engine.component import Component, Config, EngineError
from shoal.engine.node.compiler import CompileMode, KernelCache
from shoal.engine.node.deps import BlockOp
from shoal.engine.node.direct import DIRECT_WORK_ELEMENTS, run_direct, runs_direct
from shoal.engine.node.operations import Builder
from shoal.engine.node.plan import plan_batch
from shoal.engine.node.scheduler import WorkerPool
from shoal.engine.node.stats import BatchStats, record
from shoal.engine.node.storage import Storage
from shoal.system import integer_setting
from shoal.threads import limit_library_threads


class NodeEngine(Component):
    """Runs batches block by block on a thread pool with fused, compiled kernels."""

    name = "node"

    def __init__(self) -> None:
        self._storage = Storage()
        self._pool: WorkerPool | None = None
        self._kernels: KernelCache | None = None
        self.block_elements = 1 << 16
        self.threads = 1
        self.direct_work = DIRECT_WORK_ELEMENTS
        self.last_stats = BatchStats()

    def init(self, config: Config) -> None:
        self.shutdown()
        block = os.environ.get("SHOAL_BLOCK_SIZE")
        self.block_elements = integer_setting("SHOAL_BLOCK_SIZE", block, minimum=1) if block else config.block_size
        if self.block_elements < 1:
            raise ValueError(f"block size must be a positive number of elements, got {self.block_elements}")
        threads = config.options.get("threads") or os.environ.get("SHOAL_NUM_THREADS")
        self.threads = integer_setting("threads", threads, minimum=1) if threads else max(1, config.threads)
        direct = config.options.get("direct_work") or os.environ.get("SHOAL_DIRECT_WORK")
        self.direct_work = DIRECT_WORK_ELEMENTS if direct is None else integer_setting("SHOAL_DIRECT_WORK", direct, minimum=0)
        mode = config.options.get("compile") or os.environ.get("SHOAL_COMPILE") or "background"
        self._kernels = KernelCache(CompileMode.parse(mode))
        self._pool = WorkerPool(self.threads)

    def _ready(self) -> tuple[WorkerPool, KernelCache]:
        if self._pool is None or self._kernels is None:
            self.init(Config())
        assert self._pool is not None and self._kernels is not None
        return self._pool, self._kernels

    def execute(self, batch: Batch) -> None:
        pool, kernels = self._ready()
        started = time.perf_counter()
        declared = {decl.id for decl in batch.bases}
        for base in batch.data:
            if base not in declared:
                raise EngineError(f"batch carries data for undeclared base {base}")
        for decl in batch.bases:
            self._storage.declare(decl, batch.data.get(decl.id), decl.id in batch.donated)
        planning = time.perf_counter()
        self._storage.peak_bytes = self._storage.bytes_held
        if runs_direct(batch, self.direct_work):
            run_direct(batch, self._storage)
            self._storage.trim()
            self.last_stats = BatchStats(
                instructions=len(batch.instructions),
                direct=True,
                peak_bytes=self._storage.peak_bytes,
                wall_seconds=time.perf_counter() - started,
            )
            record(self.last_stats)
            return
        plan = plan_batch(batch, self._storage.decls)
        builder = Builder(self._storage, kernels, self.block_elements, self.threads, self.direct_work)
        ops = builder.build(plan)
        plan_seconds = time.perf_counter() - planning
        if self.threads > 1:
            with limit_library_threads(1):  # the pool's threads are the parallelism
                run = pool.run(ops, self._prepare)
        else:
            run = pool.run(ops, self._prepare)
        self._storage.trim()
        counts = builder.counts
        self.last_stats = BatchStats(
            instructions=len(batch.instructions),
            kernels=counts.groups,
            fused_instructions=counts.fused_instructions,
            compilable_kernels=counts.compilable_groups,
            compiled_block_ops=sum(runner.compiled_blocks for runner in builder.runners),
            whole_ops=counts.whole_ops,
            product_panels=counts.product_panels,
            axis_panels=counts.axis_panels,
            releases=counts.releases,
            temporaries=len(plan.temporaries),
            peak_bytes=self._storage.peak_bytes,
            block_ops=len(ops),
            dependency_edges=builder.deps.edges,
            plan_seconds=plan_seconds,
            bookkeeping_seconds=run.bookkeeping_seconds,
            wall_seconds=time.perf_counter() - started,
        )
        record(self.last_stats)

    def _prepare(self, op: BlockOp) -> None:
        for base in op.bases:
            self._storage.ensure(base)
        for base in op.written:
            self._storage.make_writable(base)

    def fetch(self, view: View) -> np.ndarray:
        self._storage.decl(view.base)
        return self._storage.array(view).copy()

    def release(self, base: int) -> None:
        self._storage.release(base)

    def shutdown(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        if self._kernels is not None:
            self._kernels.close()
            self._kernels = None
        self._storage.clear()

    def live_bases(self) -> int:
        return len(self._storage.decls)

    def wait_for_compiler(self) -> None:
        """Block until every kernel queued for compilation is ready (benchmarks, tests)."""
        if self._kernels is not None:
            self._kernels.wait()

    @property
    def compile_errors(self) -> list[str]:
        return [] if self._kernels is None else list(self._kernels.errors)


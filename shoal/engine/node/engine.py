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
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

import numpy as np
from threadpoolctl import ThreadpoolController

from shoal.bytecode import Batch, View
from shoal.engine.component import Component, Config, EngineError
from shoal.engine.node.compiler import CompileMode, KernelCache
from shoal.engine.node.deps import BlockOp
from shoal.engine.node.operations import Builder
from shoal.engine.node.plan import plan_batch
from shoal.engine.node.scheduler import WorkerPool
from shoal.engine.node.storage import Storage


@dataclass
class BatchStats:
    """What the last batch turned into and what scheduling it cost."""

    instructions: int = 0
    kernels: int = 0  # fusion groups: one kernel per view-block each
    fused_instructions: int = 0
    compilable_kernels: int = 0
    compiled_block_ops: int = 0
    whole_ops: int = 0
    releases: int = 0
    temporaries: int = 0  # bases that were never allocated
    block_ops: int = 0
    dependency_edges: int = 0
    plan_seconds: float = 0.0
    bookkeeping_seconds: float = 0.0
    wall_seconds: float = 0.0

    @property
    def scheduling_us_per_block_op(self) -> float:
        """Planning, dependency insertion and ready-queue bookkeeping per block operation (µs)."""
        if not self.block_ops:
            return 0.0
        return (self.plan_seconds + self.bookkeeping_seconds) / self.block_ops * 1e6


def _int_setting(name: str, text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise ValueError(f"{name} must be a positive integer, got {text!r}") from None
    if value < 1:
        raise ValueError(f"{name} must be a positive integer, got {text!r}")
    return value


class NodeEngine(Component):
    """Runs batches block by block on a thread pool with fused, compiled kernels."""

    name = "node"

    def __init__(self) -> None:
        self._storage = Storage()
        self._pool: WorkerPool | None = None
        self._kernels: KernelCache | None = None
        self._controller: ThreadpoolController | None = None
        self.block_elements = 1 << 16
        self.threads = 1
        self.last_stats = BatchStats()

    def init(self, config: Config) -> None:
        self.shutdown()
        block = os.environ.get("SHOAL_BLOCK_SIZE")
        self.block_elements = _int_setting("SHOAL_BLOCK_SIZE", block) if block else config.block_size
        if self.block_elements < 1:
            raise ValueError(f"block size must be a positive number of elements, got {self.block_elements}")
        threads = config.options.get("threads") or os.environ.get("SHOAL_NUM_THREADS")
        self.threads = _int_setting("threads", threads) if threads else max(1, config.threads)
        mode = config.options.get("compile") or os.environ.get("SHOAL_COMPILE") or "background"
        self._kernels = KernelCache(CompileMode.parse(mode))
        self._pool = WorkerPool(self.threads)
        self._controller = ThreadpoolController() if self.threads > 1 else None

    def _ready(self) -> tuple[WorkerPool, KernelCache]:
        if self._pool is None or self._kernels is None:
            self.init(Config())
        assert self._pool is not None and self._kernels is not None
        return self._pool, self._kernels

    def execute(self, batch: Batch) -> None:
        pool, kernels = self._ready()
        started = time.perf_counter()
        for decl in batch.bases:
            self._storage.declare(decl, batch.data.get(decl.id))
        for base in batch.data:
            if base not in self._storage.decls:
                raise EngineError(f"batch carries data for undeclared base {base}")
        plan = plan_batch(batch, self._storage.decls)
        builder = Builder(self._storage, kernels, self.block_elements)
        ops = builder.build(plan)
        plan_seconds = time.perf_counter() - started
        if self._controller is not None:
            with self._controller.limit(limits=1):
                run = pool.run(ops, self._prepare)
        else:
            run = pool.run(ops, self._prepare)
        counts = builder.counts
        self.last_stats = BatchStats(
            instructions=len(batch.instructions),
            kernels=counts.groups,
            fused_instructions=counts.fused_instructions,
            compilable_kernels=counts.compilable_groups,
            compiled_block_ops=sum(runner.compiled_blocks for runner in builder.runners),
            whole_ops=counts.whole_ops,
            releases=counts.releases,
            temporaries=len(plan.temporaries),
            block_ops=len(ops),
            dependency_edges=builder.deps.edges,
            plan_seconds=plan_seconds,
            bookkeeping_seconds=run.bookkeeping_seconds,
            wall_seconds=time.perf_counter() - started,
        )

    def _prepare(self, op: BlockOp) -> None:
        for base in op.bases:
            self._storage.ensure(base)
        if op.exclusive and self._controller is not None:
            op.run = _with_threads(op.run, self._controller, self.threads)

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


def _with_threads(run, controller: ThreadpoolController, threads: int):
    def run_with_all_cores():
        with controller.limit(limits=threads):
            return run()

    return run_with_all_cores

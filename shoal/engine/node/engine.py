"""The node engine: blocks, per-block dependency lists, fused kernels, a thread pool.

``execute`` plans a batch (fusion groups, whole-view operations, releases), turns the plan into
block operations with reference counts, and runs the ready queue on the pool. It returns when
the batch is done, so ``fetch`` reads finished data.

Its configuration is a :class:`NodeConfig` (``config.py``); a stack spelled by name gets the one
that Shoal's settings ask for (``shoal.settings``: ``SHOAL_BLOCK_SIZE``, ``SHOAL_NUM_THREADS``,
``SHOAL_COMPILE``, ``SHOAL_COMPILE_EXIT``, ``SHOAL_SCHEDULE``, ``SHOAL_DIRECT_WORK``,
``SHOAL_SWEEPS_PER_PASS``, ``SHOAL_VERIFY_EXECUTE``). The block size is in **elements** of each base's dtype: base-blocks
and view-blocks both have about this many elements. A batch whose element operations are below
``direct_work`` runs instruction by instruction without blocks (0 = never); so does a batch
whose instructions average under 1/4 of it, and a lone element-wise instruction under 1/64 of
it runs whole instead of as a kernel. ``sweeps_per_pass`` is how many consecutive identical
in-place stencil sweeps a compiled kernel runs per pass over memory (1 = one per pass).
``verify`` holds the limits every batch is verified with before it touches memory (None: not
verified; :mod:`shoal.bytecode.boundary`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import asdict
from functools import partial

import numpy as np

from shoal import trace
from shoal.bytecode import Batch, View
from shoal.bytecode.opcodes import BY_NAME, Kind
from shoal.engine import fp_signals
from shoal.engine.blocks.dependencies import BlockOp
from shoal.engine.blocks.thread_pool import WorkerPool
from shoal.engine.component import Component, EngineError, name_instruction
from shoal.engine.node.compile.kernel_cache import CompileMode, KernelCache
from shoal.engine.node.config import NodeConfig, Schedule, TileLoops
from shoal.engine.node.plan.plan import Plan, plan_batch
from shoal.engine.node.plan.reorder import reorder_by_shape
from shoal.engine.node.run.direct import run_direct, runs_direct
from shoal.engine.node.run.storage import Storage, settle_aliases, settle_deferred
from shoal.engine.node.run.zero_fills import drop_zero_fills
from shoal.engine.node.schedule.builder import Builder
from shoal.engine.node.schedule.memory_budget import MemoryBudget
from shoal.engine.node.schedule.plan_cache import (
    BatchShape,
    BoundStorage,
    CachedPlan,
    PlanCache,
    batch_shape,
)
from shoal.engine.node.schedule.repeat import Previous, repeated_shape
from shoal.engine.node.schedule.verified import VerifiedShapes, sequence_of
from shoal.engine.node.stats import BatchStats, record
from shoal.threads import limit_library_threads


def _followed(source: Callable[[], list[BlockOp] | None], budget: MemoryBudget) -> Callable[[], list[BlockOp] | None]:
    """``source``, with every operation it builds added to ``budget`` (they come in program order)."""

    def built() -> list[BlockOp] | None:
        ops = source()
        if ops is not None:
            budget.add(ops)
        return ops

    return built


def _take_donated(batch: Batch) -> None:
    """Take the arrays the producer donated out of ``batch`` once planning is done: the storage
    holds them now, and its release frees them mid-batch instead of when the batch is dropped
    (lattice_boltzmann's first populations array, 8 MB, lived through a 2,000-instruction batch)."""
    for base in batch.donated:
        batch.data.pop(base, None)


REMEMBERED_STRUCTURES = 64


class NodeEngine(Component):
    """Runs batches block by block on a thread pool with fused, compiled kernels."""

    name = "node"

    def __init__(self, config: NodeConfig | None = None) -> None:
        self.config = config or NodeConfig()
        self.block_elements = self.config.block_size
        self.threads = self.config.threads
        self.direct_work = self.config.direct_work
        self.sweeps_per_pass = self.config.sweeps_per_pass
        self._verify = self.config.verify
        self._verified = VerifiedShapes()
        self._previous: dict[tuple, Previous] = {}  # the last keyed batch of each opcode sequence (``repeat.py``)
        self.repeated = 0  # batches that took the previous batch's key (a counter for tests)
        self._storage = Storage()
        self._pool: WorkerPool | None = None
        self._kernels: KernelCache | None = None
        self.last_stats = BatchStats()
        self._plans = PlanCache()
        self._active: Storage | BoundStorage = self._storage
        self._budget = MemoryBudget(self._storage, 0)
        self._ready()

    @classmethod
    def configure(cls, environ: Mapping[str, str] | None = None) -> NodeConfig:
        return NodeConfig.from_settings(environ)

    def _ready(self) -> tuple[WorkerPool, KernelCache]:
        """The thread pool and the kernel cache, started with the first batch (again after a
        shutdown)."""
        if self._pool is None or self._kernels is None:
            config = self.config
            self._kernels = KernelCache(config.compile, self.threads, config.compile_exit)
            self._pool = WorkerPool(self.threads, reverse=config.schedule is Schedule.REVERSE)
        return self._pool, self._kernels

    def execute(self, batch: Batch) -> None:
        tracer = trace.TRACER
        with fp_signals.running(batch):  # the batch as sent: its positions name instructions
            batch = drop_zero_fills(batch, self._storage)
            if tracer is None:
                self._execute(batch)
                return
            with tracer.span("execute batch", "scheduling", {"instructions": len(batch.instructions)}):
                self._execute(batch)

    def _execute(self, batch: Batch) -> None:
        pool, kernels = self._ready()
        started = time.perf_counter()
        direct, shape = self._structure(batch)
        keyed = time.perf_counter() - started
        if self._verify is not None:
            self._verified.check(batch, shape, self._storage.decls, self._verify)
        if direct is None:
            direct = runs_direct(batch, self.direct_work)
        declared = {decl.id for decl in batch.bases}
        for base in batch.data:
            if base not in declared:
                raise EngineError(f"batch carries data for undeclared base {base}")
        for decl in batch.bases:
            self._storage.declare(decl, batch.data.get(decl.id), decl.id in batch.donated)
        settle_aliases(self._storage, batch)
        settle_deferred(self._storage, batch)
        planning = time.perf_counter()
        self._storage.peak_bytes = self._storage.bytes_held
        if direct:
            _take_donated(batch)
            tracer = trace.TRACER
            sharing = pool if self.threads > 1 else None  # the threads that share a large call's rows
            if tracer is None:
                run_direct(batch, self._storage, sharing)
            else:
                with tracer.span("run instruction by instruction", "compute"):
                    run_direct(batch, self._storage, sharing)
            self._storage.trim()
            self.last_stats = BatchStats(
                instructions=len(batch.instructions),
                direct=True,
                peak_bytes=self._storage.peak_bytes,
                wall_seconds=time.perf_counter() - started,
            )
            record(self.last_stats)
            return
        if shape is not None:  # a sweep pass's kernel compiled since: plan again, with it
            self._plans.forget_if(shape, lambda plan: any(kernels.ready(key) for key in plan.awaiting))
        cached = None if shape is None else self._plans.take(shape)
        replayed = cached is not None
        building: Builder | None = None
        if cached is None:
            cached, building, plan = self._plan(batch, shape, kernels)
            steps = building.steps(plan)
            more = lambda: next(steps, None)  # noqa: E731
        _take_donated(batch)
        plan_seconds = time.perf_counter() - planning + keyed
        tracer = trace.TRACER
        if tracer is not None:
            # The structure key was computed before verification: the event covers the planning after it.
            tracer.complete("plan (replayed)" if replayed else "plan", "scheduling", planning, planning + plan_seconds - keyed)
        compiled_before = sum(runner.compiled_blocks for runner in cached.runners)
        loops_before = sum(runner.loop_blocks for runner in cached.runners)
        self._active = cached.storage
        ops, source = (cached.ops, None) if building is None else ([], more)
        named = partial(_name_failure, batch)
        try:
            if self.threads > 1:
                budget = MemoryBudget(cached.storage, self._storage.bytes_held)
                budget.add(ops)
                if source is not None:
                    source = _followed(source, budget)
                self._budget = budget
                with limit_library_threads(1) if cached.calls_libraries else nullcontext():  # the pool's threads are the parallelism
                    run = pool.run(ops, self._prepare, source, self._holds_back, named)
            else:
                run = pool.run(ops, self._prepare, source, on_failure=named)
        except BaseException:
            if shape is not None:
                self._plans.forget(shape)
            raise
        finally:
            cached.finished()
            self._active = self._storage
        cached.leave_aliases()
        if building is not None:
            cached.stats.update(asdict(building.counts), dependency_edges=building.deps.edges)
            cached.awaiting = tuple(building.awaiting)
            if shape is not None:
                self._plans.put(shape, cached)
        self._storage.trim()
        self.last_stats = BatchStats(
            instructions=len(batch.instructions),
            replayed=replayed,
            compiled_block_ops=sum(runner.compiled_blocks for runner in cached.runners) - compiled_before,
            loop_block_ops=sum(runner.loop_blocks for runner in cached.runners) - loops_before,
            peak_bytes=self._storage.peak_bytes,
            block_ops=len(cached.ops),
            plan_seconds=plan_seconds + run.building_seconds,
            bookkeeping_seconds=run.bookkeeping_seconds,
            wall_seconds=time.perf_counter() - started,
            **cached.stats,
        )
        record(self.last_stats)

    def _structure(self, batch: Batch) -> tuple[bool | None, BatchShape | None]:
        """Whether ``batch`` runs directly, and its plan cache key (also what verification needs;
        a batch that runs directly is keyed only if its opcodes recur). A malformed batch, which
        verification then rejects with its message, gets (None, None)."""
        try:
            live = self._storage.decls
            sequence = sequence_of(batch)
            previous = self._previous.get(sequence)
            if previous is not None and previous.direct_work == self.direct_work:
                shape = repeated_shape(batch, previous, live)
                if shape is not None:
                    self.repeated += 1
                    if self._verify is not None:
                        self._verified.recurs(batch, sequence)  # keeps the count of keys that missed
                    return previous.direct, shape  # the work, hence the choice, is structural
            direct = runs_direct(batch, self.direct_work)
            if direct and not (self._verify is not None and self._verified.recurs(batch, sequence)):
                return direct, None
            shape = batch_shape(batch, live)
            if shape is not None:
                self._remember(sequence, Previous(batch, shape, direct, self.direct_work))
            return direct, shape
        except (AttributeError, TypeError, ValueError, OverflowError):
            return None, None

    def _remember(self, sequence: tuple, previous: Previous) -> None:
        """Keep ``previous`` as the batch of its opcode sequence to compare the next ones with
        (a loop whose iteration reads twice alternates two structures)."""
        remembered = self._previous
        remembered.pop(sequence, None)
        remembered[sequence] = previous
        if len(remembered) > REMEMBERED_STRUCTURES:
            del remembered[next(iter(remembered))]

    def _plan(self, batch: Batch, shape: BatchShape | None, kernels: KernelCache) -> tuple[CachedPlan, Builder, Plan]:
        """Plan ``batch``; its block operations, on storage bound to its own base ids, are built
        while the pool runs the first ones (``Builder.steps``) and fill the returned plan."""
        storage: Storage | BoundStorage = self._storage
        if shape is not None:
            storage = BoundStorage(self._storage, {base: base for base in shape.ids}, shape.constants)
        fp_signals.planned()
        plan = plan_batch(reorder_by_shape(batch), self._storage.decls)
        positions = {id(instruction): index for index, instruction in enumerate(batch.instructions)}
        loops = self.config.tile_loops is TileLoops.ON
        builder = Builder(storage, kernels, self.block_elements, self.threads, self.direct_work, self.sweeps_per_pass, positions, self.config.tile_elements, loops)
        stats = {"temporaries": len(plan.temporaries), "aliases": len(plan.aliases)}
        cached = CachedPlan(shape.ids if shape is not None else (), storage, builder.deps.ops, stats, builder.runners, aliases=plan.aliases, calls_libraries=calls_library_pools(batch))
        return cached, builder, plan

    def _prepare(self, op: BlockOp) -> None:
        storage = self._active
        for base in op.bases:
            storage.ensure(base)
        for base in op.written:
            storage.make_writable(base)

    def _holds_back(self, op: BlockOp) -> bool:
        """An operation that would take memory beyond the most program order holds waits for the
        ones in flight: finishing them runs the releases before it (``memory_budget``)."""
        return bool(op.bases) and not self._budget.allows(op, self._storage.bytes_held)

    def fetch(self, view: View) -> np.ndarray:
        self._storage.decl(view.base)
        return self._storage.contents(view)

    def memory(self, view: View, write: bool = False) -> np.ndarray | None:
        storage = self._storage
        base = view.base
        if base not in storage.decls:
            return None
        aliases = storage.aliases()
        if base in aliases or (write and any(region.base == base for region in aliases.values())):
            return None  # its values live in another base's region, or an alias reads this one
        if write:
            storage.ensure(base)
            storage.make_writable(base)
        return storage.array(view)

    def in_process(self) -> bool:
        return True

    def forked(self) -> Component:
        """This engine in a forked child: the child has a copy of its memory, and gets a thread
        pool of its own (the parent's threads are gone) and a kernel cache that never compiles
        (a compiler thread or process of its own would outlive a child that ends with
        ``os._exit``, as pool workers do); its kernels run on the NumPy path."""
        self._pool = WorkerPool(self.threads, reverse=self.config.schedule is Schedule.REVERSE)
        self._kernels = KernelCache(CompileMode.OFF, self.threads, self.config.compile_exit)
        return self

    def forget_structures(self) -> None:
        """Forget every cached plan and verified batch structure: the next batches are planned
        and verified from scratch (a benchmark of fresh planning asks for this)."""
        self._plans.clear()
        self._verified = VerifiedShapes()
        self._previous.clear()

    def shutdown(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None
        if self._kernels is not None:
            self._kernels.close()
            self._kernels = None
        self._storage.clear()
        self._plans.clear()
        self._previous.clear()

    def live_bases(self) -> int:
        return len(self._storage.decls)

    def wait_for_compiler(self) -> None:
        """Block until every kernel queued for compilation is ready (benchmarks, tests)."""
        if self._kernels is not None:
            self._kernels.wait()

    @property
    def compile_errors(self) -> list[str]:
        return [] if self._kernels is None else list(self._kernels.errors)


def _name_failure(batch: Batch, op: BlockOp, error: BaseException) -> None:
    """Name the instructions of ``batch`` that the failed block operation ``op`` computes, as the
    reference engine names the instruction that raised (a fused kernel computes several)."""
    if len(op.origin) == 1:
        index = op.origin[0]
        name_instruction(error, index, batch.instructions[index])
    elif op.origin:
        ops = ", ".join(batch.instructions[index].op for index in op.origin)
        error.add_note(f"in instructions {', '.join(map(str, op.origin))} (fused): {ops}")


def calls_library_pools(batch: Batch) -> bool:
    """True if an instruction of ``batch`` may start a library's thread pool: a matrix product,
    linear algebra or a transform (BLAS, LAPACK), or any operation on Python objects (their methods
    may). Only such a batch limits the libraries' threads while the pool runs it: the first
    limit in a process finds the libraries loaded in it, about 2 ms. Asked once per plan
    (``CachedPlan.calls_libraries``): a replayed batch has its plan's opcodes and dtypes."""
    for instruction in batch.instructions:
        entry = BY_NAME.get(instruction.op)
        if entry is None or entry.kind is Kind.LINALG:  # an unknown opcode fails later, as before
            return True
        for operand in (*instruction.inputs, *instruction.outputs):
            dtype = getattr(operand, "dtype", None)
            if dtype is not None and dtype.kind == "O":
                return True
    return False

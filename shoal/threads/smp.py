"""Static thread budgets per pool worker (paper 002 §2.1), without changing the program.

Patches the constructors of ``multiprocessing.Pool``, ``multiprocessing.pool.ThreadPool``
and ``concurrent.futures``' executors in place (so subclasses and names imported
before the patch are covered) to give each worker's inner libraries
``max(1, cores / workers * factor)`` threads:

* process workers get a CPU affinity mask of their own share of the cores, and
  the same limit for libraries already loaded (a forked child inherits its
  parent's thread counts, which affinity alone would not change).  A worker
  that replaces a dead one takes the dead one's share.
* thread workers get the limit through the libraries' controls: per thread
  where the library has per-thread control (OpenMP, Numba).  Process-wide
  controls (OpenBLAS, numexpr) hold one setting for all workers, and OpenBLAS's
  surplus threads spin instead of yielding, so there the limit is clamped to
  ``workers * threads <= cores`` (factor 1); the smallest limit of the live
  pools applies, so pools of different sizes never oversubscribe.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.pool
import os
import weakref
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass

from shoal.system import pid_alive
from shoal.threads.budget import available_cores, spinning_threads_per_worker, threads_per_worker
from shoal.threads.coordination import composability_mode, install_call_regions
from shoal.threads.libraries import (
    drop_process_wide_limit,
    hold_process_wide_limit,
    limit_this_thread,
)

DEFAULT_FACTOR = 2.0
THREAD_ENVIRONMENT = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "BLIS_NUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "NUMBA_NUM_THREADS",
)


@dataclass(frozen=True)
class WorkerPlan:
    """How one pool shares the cores among its workers."""

    cpus: tuple[int, ...]
    workers: int
    threads: int
    factor: float

    def cpus_for(self, slot: int) -> tuple[int, ...]:
        """The affinity mask of the worker in ``slot``: ``threads`` cores from its share's start."""
        count = min(self.threads, len(self.cpus))
        start = slot * len(self.cpus) // self.workers
        return tuple(sorted(self.cpus[(start + i) % len(self.cpus)] for i in range(count)))


def plan_for(workers: int, factor: float) -> WorkerPlan:
    """The plan for a pool of ``workers`` created now, in this process."""
    cpus = tuple(sorted(os.sched_getaffinity(0)))
    threads = threads_per_worker(workers, factor, available_cores())
    return WorkerPlan(cpus=cpus, workers=workers, threads=threads, factor=factor)


@dataclass(frozen=True)
class _Originals:
    pool_init: object
    pool_terminate: object
    pool_join: object
    thread_executor_init: object
    thread_executor_shutdown: object
    process_executor_init: object


_originals: _Originals | None = None
_factor: float | None = None


def installed_factor() -> float | None:
    """The factor of the installed patches, or None when not installed."""
    return _factor


def install(factor: float = DEFAULT_FACTOR) -> None:
    """Patch the pools so new pools budget their workers' inner threads."""
    global _originals, _factor
    if not factor > 0:
        raise ValueError(f"oversubscription factor must be positive, got {factor!r}")
    _factor = float(factor)
    if _originals is not None:
        return
    Pool = multiprocessing.pool.Pool
    _originals = _Originals(
        pool_init=Pool.__init__,
        pool_terminate=Pool.terminate,
        pool_join=Pool.join,
        thread_executor_init=ThreadPoolExecutor.__init__,
        thread_executor_shutdown=ThreadPoolExecutor.shutdown,
        process_executor_init=ProcessPoolExecutor.__init__,
    )
    Pool.__init__ = _pool_init
    Pool.terminate = _pool_terminate
    Pool.join = _pool_join
    ThreadPoolExecutor.__init__ = _thread_executor_init
    ThreadPoolExecutor.shutdown = _thread_executor_shutdown
    ProcessPoolExecutor.__init__ = _process_executor_init


def uninstall() -> None:
    """Restore the original pool classes (pools already made keep their budgets)."""
    global _originals, _factor
    if _originals is None:
        return
    Pool = multiprocessing.pool.Pool
    Pool.__init__ = _originals.pool_init
    Pool.terminate = _originals.pool_terminate
    Pool.join = _originals.pool_join
    ThreadPoolExecutor.__init__ = _originals.thread_executor_init
    ThreadPoolExecutor.shutdown = _originals.thread_executor_shutdown
    ProcessPoolExecutor.__init__ = _originals.process_executor_init
    _originals = None
    _factor = None


def _valid_workers(workers: object) -> bool:
    return isinstance(workers, int) and not isinstance(workers, bool) and workers >= 1


def _hold_while_alive(pool: object, threads: int) -> None:
    hold_process_wide_limit(threads)
    pool._shoal_release_limit = weakref.finalize(pool, drop_process_wide_limit, threads)


def _release_limit(pool: object) -> None:
    release = getattr(pool, "_shoal_release_limit", None)
    if release is not None:
        release()


def _pool_init(self, processes=None, initializer=None, initargs=(), maxtasksperchild=None, context=None):
    workers = processes if processes is not None else (os.cpu_count() or 1)
    if _factor is None or not _valid_workers(workers):
        return _originals.pool_init(self, processes, initializer, initargs, maxtasksperchild, context)
    plan = plan_for(workers, _factor)
    if isinstance(self, multiprocessing.pool.ThreadPool):
        _hold_while_alive(self, spinning_threads_per_worker(workers, _factor))
        wrapped = (_start_thread_worker, (plan.threads, initializer, tuple(initargs)))
    else:
        slots = (context or multiprocessing.get_context()).Array("q", workers)
        wrapped = (_start_process_worker, (plan, slots, initializer, tuple(initargs)))
    return _originals.pool_init(self, processes, *wrapped, maxtasksperchild, context)


def _pool_terminate(self):
    try:
        return _originals.pool_terminate(self)
    finally:
        _release_limit(self)


def _pool_join(self):
    _originals.pool_join(self)
    _release_limit(self)


def _thread_executor_init(self, max_workers=None, thread_name_prefix="", initializer=None, initargs=()):
    workers = max_workers if max_workers is not None else min(32, (os.cpu_count() or 1) + 4)
    if _factor is None or not _valid_workers(workers):
        return _originals.thread_executor_init(self, max_workers, thread_name_prefix, initializer, initargs)
    threads = threads_per_worker(workers, _factor)
    _hold_while_alive(self, spinning_threads_per_worker(workers, _factor))
    return _originals.thread_executor_init(
        self, max_workers, thread_name_prefix, _start_thread_worker, (threads, initializer, tuple(initargs))
    )


def _thread_executor_shutdown(self, *args, **kwargs):
    try:
        return _originals.thread_executor_shutdown(self, *args, **kwargs)
    finally:
        _release_limit(self)


def _process_executor_init(self, max_workers=None, mp_context=None, initializer=None, initargs=(), **kwargs):
    workers = max_workers if max_workers is not None else (os.cpu_count() or 1)
    if _factor is None or not _valid_workers(workers):
        return _originals.process_executor_init(self, max_workers, mp_context, initializer, initargs, **kwargs)
    plan = plan_for(workers, _factor)
    slots = (mp_context or multiprocessing.get_context()).Array("q", workers)
    return _originals.process_executor_init(
        self, max_workers, mp_context, _start_process_worker, (plan, slots, initializer, tuple(initargs)), **kwargs
    )


def _start_thread_worker(threads: int, initializer, initargs: tuple) -> None:
    limit_this_thread(threads)
    if initializer is not None:
        initializer(*initargs)


def _claim_slot(slots) -> int:
    me = os.getpid()
    with slots.get_lock():
        owners = list(slots.get_obj())
        for slot, owner in enumerate(owners):
            if owner == 0 or owner == me or not pid_alive(owner):
                slots.get_obj()[slot] = me
                return slot
    return me % len(owners)  # more live workers than slots: share one


def _start_process_worker(plan: WorkerPlan, slots, initializer, initargs: tuple) -> None:
    slot = _claim_slot(slots)
    os.sched_setaffinity(0, plan.cpus_for(slot))
    for name in THREAD_ENVIRONMENT:
        os.environ[name] = str(plan.threads)
    hold_process_wide_limit(plan.threads)
    limit_this_thread(plan.threads)
    install(plan.factor)
    if composability_mode() is not None:
        install_call_regions()
    if initializer is not None:
        initializer(*initargs)

"""The node's thread budget: how many threads each level of Shoal's nesting gets."""

from __future__ import annotations

import math
import os
from dataclasses import dataclass

from shoal.settings import NUM_THREADS

DEFAULT_ENGINE_FACTOR = 1.0


def available_cores() -> int:
    """Cores this process may use: ``SHOAL_NUM_THREADS`` if set, else the CPU affinity mask."""
    override = NUM_THREADS.value()
    if override is not None:
        return override
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # platforms without affinity masks
        return os.cpu_count() or 1


def node_cores() -> int:
    """Cores of the whole node, shared by every process: ``SHOAL_NUM_THREADS`` or the CPU count.

    Unlike :func:`available_cores` this ignores the affinity mask, which a pool
    worker may have narrowed to its own share.
    """
    if NUM_THREADS.value() is not None:
        return available_cores()
    return os.cpu_count() or 1


def threads_per_worker(workers: int, factor: float = DEFAULT_ENGINE_FACTOR, cores: int | None = None) -> int:
    """Inner-library threads for each of ``workers`` outer workers: ``max(1, cores / workers * factor)``."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(f"workers must be a positive integer, got {workers!r}")
    if not factor > 0:
        raise ValueError(f"oversubscription factor must be positive, got {factor!r}")
    if cores is None:
        cores = available_cores()
    return max(1, math.floor(cores / workers * factor + 1e-9))


def spinning_threads_per_worker(workers: int, factor: float = DEFAULT_ENGINE_FACTOR, cores: int | None = None) -> int:
    """Threads of a process-wide, spin-waiting pool (OpenBLAS) for each of ``workers`` thread workers.

    :func:`threads_per_worker`, clamped so that ``workers * threads <= cores``:
    every worker's calls share one setting, and surplus threads of such pools
    busy-wait for cores instead of yielding them (see docs/decisions.md).
    """
    threads = threads_per_worker(workers, factor, cores)
    if cores is None:
        cores = available_cores()
    return min(threads, max(1, cores // workers))


@dataclass(frozen=True)
class Budget:
    """How the cores of this process are shared by Shoal's levels of parallelism.

    ``engine_threads`` run Shoal's ready work; each of them gives inner libraries
    ``library_threads_per_engine_thread``.  ``task_workers`` processes run tasks,
    each with ``library_threads_per_task_worker`` inner threads.  Code running
    alone (nothing else of Shoal in parallel) may use ``cores`` library threads.
    """

    cores: int
    factor: float
    engine_threads: int
    library_threads_per_engine_thread: int
    task_workers: int
    library_threads_per_task_worker: int


def budget(factor: float = DEFAULT_ENGINE_FACTOR) -> Budget:
    """The budget for this process; ``factor`` is the allowed oversubscription (1 = none)."""
    cores = available_cores()
    return Budget(
        cores=cores,
        factor=factor,
        engine_threads=cores,
        library_threads_per_engine_thread=threads_per_worker(cores, factor, cores),
        task_workers=cores,
        library_threads_per_task_worker=threads_per_worker(cores, factor, cores),
    )

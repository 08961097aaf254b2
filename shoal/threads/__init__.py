"""Thread budget shared by Shoal's engine, task workers and BLAS/OpenMP libraries.

* :func:`budget` / :func:`available_cores`: how many threads each level gets.
* :func:`limit_library_threads`: cap BLAS/OpenMP/numexpr/Numba threads in this process.
* :func:`parallel_region`: take node-wide tokens per ``SHOAL_COMPOSABILITY``.
* ``python -m shoal.smp``: per-pool static budgets for unchanged programs.
"""

from __future__ import annotations

from shoal.threads.budget import (
    Budget,
    available_cores,
    budget,
    node_cores,
    spinning_threads_per_worker,
    threads_per_worker,
)
from shoal.threads.coordination import Mode, composability_mode, parallel_region
from shoal.threads.libraries import library_pools, library_threads, limit_library_threads

__all__ = [
    "Budget",
    "Mode",
    "available_cores",
    "budget",
    "composability_mode",
    "library_pools",
    "library_threads",
    "limit_library_threads",
    "node_cores",
    "parallel_region",
    "spinning_threads_per_worker",
    "threads_per_worker",
]

"""Thread budget shared by Shoal's engine, task workers and BLAS/OpenMP libraries."""

from __future__ import annotations

import os


def available_cores() -> int:
    """Cores this process may use: ``SHOAL_NUM_THREADS`` if set, else the CPU affinity mask."""
    override = os.environ.get("SHOAL_NUM_THREADS")
    if override:
        try:
            value = int(override)
        except ValueError:
            raise ValueError(f"SHOAL_NUM_THREADS must be a positive integer, got {override!r}") from None
        if value < 1:
            raise ValueError(f"SHOAL_NUM_THREADS must be a positive integer, got {override!r}")
        return value
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # platforms without affinity masks
        return os.cpu_count() or 1

"""The text of ``python -m shoal info``: the thread budget and the thread pools found."""

from __future__ import annotations

import importlib.util

from shoal.threads.budget import budget, node_cores
from shoal.threads.coordination import composability_mode, node_semaphore
from shoal.threads.libraries import library_pools


def _import_thread_libraries() -> None:
    # Loading them is what makes their pools visible; Numba's pool starts only on use.
    for name in ("numpy", "numexpr"):
        if importlib.util.find_spec(name) is not None:
            __import__(name)


def report() -> str:
    """A human-readable report of the node's thread budget and the libraries' pools."""
    _import_thread_libraries()
    node_budget = budget()
    try:
        mode = composability_mode()
        mode_text = mode.value if mode is not None else "off (SHOAL_COMPOSABILITY unset)"
    except ValueError as error:
        mode_text = f"invalid: {error}"
    semaphore = node_semaphore()
    lines = [
        "Thread budget",
        f"  cores available to this process   {node_budget.cores}",
        f"  cores of the node                 {node_cores()}",
        f"  engine threads                    {node_budget.engine_threads}",
        f"  library threads per engine thread {node_budget.library_threads_per_engine_thread}",
        f"  task workers                      {node_budget.task_workers}",
        f"  library threads per task worker   {node_budget.library_threads_per_task_worker}",
        "Coordination across processes",
        f"  mode                              {mode_text}",
        f"  semaphore                         {semaphore.path} ({semaphore.size} tokens, "
        f"{semaphore.tokens_in_use()} in use)",
        "Thread pools found",
    ]
    pools = library_pools()
    if not pools:
        lines.append("  none")
    for pool in pools:
        details = ", ".join(
            part for part in (pool.version and f"version {pool.version}", pool.threading_layer) if part
        )
        lines.append(f"  {pool.name:<10} {pool.user_api:<8} {pool.threads:>3} threads  {details}")
        if pool.filepath:
            lines.append(f"             {pool.filepath}")
    return "\n".join(lines)

"""Run a program under Shoal and report the node engine's scheduling statistics at exit.

``python -m shoal.bench.launch PROGRAM [ARGS...]`` runs ``python -m shoal PROGRAM ARGS`` in this
process (the runner, ``shoal.__main__``), while every batch the node engine executes adds its
``BatchStats`` to a running total. At exit one line goes to stderr::

    shoal-stats: batches=B block_ops=N scheduling_seconds=S

where ``S`` is the planning and ready-queue bookkeeping time (``BatchStats.plan_seconds`` +
``bookkeeping_seconds``), so ``S / N`` is the scheduling cost per block operation.
"""

from __future__ import annotations

import atexit
import sys

from shoal.bench.stats import Totals


def _count_node_engine_batches(totals: Totals) -> bool:
    """Wrap ``NodeEngine.execute`` so each batch adds its stats to ``totals``; False if absent."""
    try:
        from shoal.engine.node import NodeEngine
    except ImportError:
        return False
    execute = NodeEngine.execute

    def counted(self: NodeEngine, batch) -> None:
        execute(self, batch)
        stats = self.last_stats
        totals.batches += 1
        totals.block_ops += stats.block_ops
        totals.scheduling_seconds += stats.plan_seconds + stats.bookkeeping_seconds

    NodeEngine.execute = counted
    return True


def main(argv: list[str] | None = None) -> None:
    arguments = sys.argv[1:] if argv is None else argv
    if not arguments:
        raise SystemExit("usage: python -m shoal.bench.launch PROGRAM [ARGS...]")
    try:
        from shoal.__main__ import main as run_under_shoal
    except ImportError:
        raise SystemExit("the Shoal runner (python -m shoal, shoal/__main__.py) is not installed") from None
    totals = Totals()
    if _count_node_engine_batches(totals):
        atexit.register(lambda: print(totals.line(), file=sys.stderr, flush=True))
    sys.argv = ["shoal", *arguments]
    result = run_under_shoal(arguments)
    if isinstance(result, int) and result:
        raise SystemExit(result)


if __name__ == "__main__":
    main()

"""Node engine statistics summed over a whole program, printed at exit with ``SHOAL_STATS=1``.

Every batch the node engine executes adds its :class:`BatchStats` to one process-wide
:class:`EngineTotals`. With ``SHOAL_STATS=1`` in the environment the totals go to stderr at exit
as one line that ``shoal.bench`` parses::

    shoal-stats: batches=B block_ops=N scheduling_seconds=S ...

``scheduling_seconds`` is planning plus ready-queue bookkeeping, so ``S / N`` is the scheduling
cost per block operation (also printed, as ``scheduling_us_per_block_op``).
"""

from __future__ import annotations

import atexit
import sys
import threading
from dataclasses import dataclass, fields

from shoal.settings import STATS

STATS_PREFIX = "shoal-stats:"


@dataclass
class BatchStats:
    """What one batch turned into and what scheduling it cost."""

    instructions: int = 0
    direct: bool = False  # small enough to run instruction by instruction (no blocks)
    replayed: bool = False  # block operations came from the plan cache (same structure as before)
    kernels: int = 0  # fusion groups: one kernel per view-block each
    fused_instructions: int = 0
    compilable_kernels: int = 0
    compiled_block_ops: int = 0
    loop_block_ops: int = 0  # run through NumPy's inner loops over small tiles (``run.tile_loops``)
    whole_ops: int = 0
    product_panels: int = 0  # row panels of matrix products run on the pool
    axis_panels: int = 0  # slabs of reductions and scans along an axis run on the pool
    copy_chains: int = 0  # copies through a small scratch array run as one block operation
    releases: int = 0
    temporaries: int = 0  # bases that were never allocated
    aliases: int = 0  # of those, results left in another base's view (shoal.engine.node.plan.aliases)
    deferred_writes: int = 0  # in-place writes fused with their reads through block buffers
    sweep_passes: int = 0  # kernels running several identical in-place sweeps per pass
    peak_bytes: int = 0  # most base memory held at once during the batch
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


@dataclass
class EngineTotals:
    """Batch statistics summed over every batch of the process."""

    batches: int = 0
    direct_batches: int = 0
    replayed_batches: int = 0
    instructions: int = 0
    kernels: int = 0
    block_ops: int = 0
    compiled_block_ops: int = 0
    loop_block_ops: int = 0
    whole_ops: int = 0
    sweep_passes: int = 0
    plan_seconds: float = 0.0
    bookkeeping_seconds: float = 0.0
    wall_seconds: float = 0.0
    peak_bytes: int = 0

    def add(self, batch: BatchStats) -> None:
        self.batches += 1
        self.direct_batches += batch.direct
        self.replayed_batches += batch.replayed
        self.instructions += batch.instructions
        self.kernels += batch.kernels
        self.block_ops += batch.block_ops
        self.compiled_block_ops += batch.compiled_block_ops
        self.loop_block_ops += batch.loop_block_ops
        self.whole_ops += batch.whole_ops
        self.sweep_passes += batch.sweep_passes
        self.plan_seconds += batch.plan_seconds
        self.bookkeeping_seconds += batch.bookkeeping_seconds
        self.wall_seconds += batch.wall_seconds
        self.peak_bytes = max(self.peak_bytes, batch.peak_bytes)

    @property
    def scheduling_seconds(self) -> float:
        return self.plan_seconds + self.bookkeeping_seconds

    def line(self) -> str:
        """One ``key=value`` line; the first three fields are the ones ``shoal.bench`` needs."""
        values = {"batches": self.batches, "block_ops": self.block_ops, "scheduling_seconds": self.scheduling_seconds}
        values.update((f.name, getattr(self, f.name)) for f in fields(self) if f.name not in values)
        per_op = self.scheduling_seconds / self.block_ops * 1e6 if self.block_ops else 0.0
        values["scheduling_us_per_block_op"] = round(per_op, 2)
        text = " ".join(f"{key}={value!r}" for key, value in values.items())
        return f"{STATS_PREFIX} {text}"


TOTALS = EngineTotals()
_lock = threading.Lock()
_registered = False


def stats_enabled() -> bool:
    """True if ``SHOAL_STATS`` asks for the totals at exit (``1``, ``true``, ``yes``)."""
    return bool(STATS.value())


def record(batch: BatchStats) -> None:
    """Add ``batch`` to the process totals; the first call arranges the exit report if enabled."""
    global _registered
    with _lock:
        TOTALS.add(batch)
        if not _registered and stats_enabled():
            _registered = True
            atexit.register(_report)


def _report() -> None:
    print(TOTALS.line(), file=sys.stderr, flush=True)

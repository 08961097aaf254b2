"""Node engine statistics summed over one program run, read from the line it prints at exit.

A Shoal run with ``SHOAL_STATS=1`` prints ``shoal-stats: batches=B block_ops=N
scheduling_seconds=S ...`` to stderr (:mod:`shoal.engine.node.stats`); the harness keeps the
three fields it reports and ignores the rest.
"""

from __future__ import annotations

from dataclasses import dataclass

STATS_PREFIX = "shoal-stats:"  # as shoal.engine.node.stats prints it (importing that loads Numba)


@dataclass
class Totals:
    """Engine statistics summed over every batch of one program run."""

    batches: int = 0
    block_ops: int = 0
    scheduling_seconds: float = 0.0

    def line(self) -> str:
        return (
            f"{STATS_PREFIX} batches={self.batches} block_ops={self.block_ops} "
            f"scheduling_seconds={self.scheduling_seconds!r}"
        )


def parse_stats(text: str) -> Totals | None:
    """The totals a launched program printed (the last whole line of them), or None if it
    printed none. Under ``mpiexec`` every rank prints its own, and the lines may run into each
    other: a line whose fields do not read is skipped."""
    for line in reversed(text.splitlines()):
        if line.startswith(STATS_PREFIX):
            fields = dict(item.split("=", 1) for item in line[len(STATS_PREFIX) :].split() if "=" in item)
            try:
                return Totals(
                    batches=int(fields["batches"]),
                    block_ops=int(fields["block_ops"]),
                    scheduling_seconds=float(fields["scheduling_seconds"]),
                )
            except (KeyError, ValueError):
                continue
    return None

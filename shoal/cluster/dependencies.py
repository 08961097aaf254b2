"""Per-base dependency lists (paper 003 §5.7.2): which earlier operations each operation waits for.

Each local base keeps a list of the accesses of the operations planned so far (byte range, read
or write). A new operation depends on every listed access it conflicts with (a write against
anything, a read against a write). An access that a new write covers entirely leaves the list:
whatever conflicts with it later conflicts with that write too, which comes after it, so lists
stay as short as the number of distinct regions a batch touches.
"""

from __future__ import annotations

from shoal.cluster.plan import Op


def link(ops: list[Op]) -> None:
    """Set ``op.waits_for`` (a count) and ``op.dependents`` for ``ops`` in program order."""
    lists: dict[int, list[tuple[int, int, bool, Op]]] = {}
    for op in ops:
        op.waits_for = 0
        op.dependents = []
    for op in ops:
        found: set[int] = set()
        for accesses, writing in ((op.reads, False), (op.writes, True)):
            for base, low, high in accesses:
                entries = lists.setdefault(base, [])
                kept = []
                for entry in entries:
                    other_low, other_high, other_writes, other = entry
                    if other is not op and low < other_high and other_low < high and (writing or other_writes):
                        if id(other) not in found:
                            found.add(id(other))
                            other.dependents.append(op)
                            op.waits_for += 1
                        if writing and low <= other_low and other_high <= high:
                            continue  # covered by this write: later conflicts meet the write
                    kept.append(entry)
                kept.append((low, high, writing, op))
                lists[base] = kept

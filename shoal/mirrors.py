"""Copies of settled bases for a component that does not hand out its memory.

A component that runs batches elsewhere (the cluster manager, the client of a remote server)
offers no memory (:meth:`~shoal.engine.component.Component.memory`), so every small read of its
arrays was recorded and fetched: a loop reading ``a[i, i]`` or ``lower[i, :i]`` one row at a time
paid a flush and a round trip per read (a triangular solve on 2000 x 2000 at 2 ranks: 5.1 s
against NumPy's 0.008 s). Once a base that no recorded work changes has been read
``MIRROR_ACCESSES`` times since a batch last wrote it, it is fetched whole once and its small
reads are NumPy's on that copy (read-only) until a batch that writes the base is flushed or the
base is released. Reads only: a write is recorded, and the copy is dropped when that batch is
flushed; the reads are counted again from there, so a loop that writes a base between fewer reads
keeps reading it as before instead of fetching it whole every time.

A component that prefers local loops fetches such a copy sooner, and takes bases back for loops
that write them: :mod:`shoal.local_loops`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    from shoal.base_lives import LazyBase
    from shoal.runtime import Runtime

MIRROR_ACCESSES = 16  # settled reads of a base before it is fetched whole
MIRROR_BYTES = 1 << 26  # larger bases are never fetched whole for small reads
NOT_AGAIN = -1  # ``Runtime._taken_back``: this base's loops stay recorded (shoal.local_loops)


class Mirrors:
    """:meth:`_mirrored` and :meth:`_drop_mirrors` of :class:`~shoal.runtime.Runtime`."""

    def _mirrored(self: Runtime, base_id: int, weight: int) -> np.ndarray | None:
        """The read-only copy of settled base ``base_id`` (whole, 1-D), fetched from the
        component at this access if it is the ``MIRROR_ACCESSES``-th (a heavy read, ``weight``
        above 1, counts for all of them where the component prefers local loops), else None
        (the lock is held; the component offers no memory and no recorded work changes the
        base)."""
        mirror = self._mirrors.get(base_id)
        if mirror is not None:
            return mirror
        base = self.lazy_base(base_id)
        engine = self._engine
        if base is None or engine is None or not copyable(base):
            return None
        if weight > 1 and engine.prefers_local_loops():
            weight = MIRROR_ACCESSES  # a product's whole matrix: the ranks would gather it at rank 0 for each product
        reads = self._mirror_reads[base_id] = self._mirror_reads.get(base_id, 0) + weight
        if reads < MIRROR_ACCESSES:
            return None
        mirror = self._fetch_whole(base)
        mirror.flags.writeable = False  # its own memory: writable again if taken over (shoal.local_loops)
        self._mirrors[base_id] = mirror
        self._mirror_reads[base_id] = 0  # from now on, the reads the copy serves
        return mirror

    def _drop_mirrors(self: Runtime, written: set[int]) -> None:
        """At a flush: drop the copies of the bases its batch writes, and of released bases, and
        their counts of reads (and the counts of released bases taken back). A base whose copy
        served fewer than ``MIRROR_ACCESSES`` reads before a batch wrote it is not copied or
        taken back for a loop again (:mod:`shoal.local_loops`): its loop reads little of it
        between whole-array writes."""
        for base_id in self._mirrors:
            if base_id in written and self._mirror_reads.get(base_id, 0) < MIRROR_ACCESSES:
                self._taken_back[base_id] = NOT_AGAIN
        for table in (self._mirrors, self._mirror_reads):
            for base_id in [base_id for base_id in table if base_id in written or base_id not in self._bases]:
                del table[base_id]
        for base_id in [base_id for base_id in self._taken_back if base_id not in self._bases]:
            del self._taken_back[base_id]


def copyable(base: LazyBase) -> bool:
    """True if ``base`` may be fetched whole to the frontend: not empty, at most ``MIRROR_BYTES``."""
    return 0 < base.size * base.dtype.itemsize <= MIRROR_BYTES

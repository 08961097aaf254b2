"""Release of data no task needs any more: values, worker copies and segments."""

from __future__ import annotations

import contextlib

import numpy as np

from shoal.tasks import shm, wire
from shoal.tasks.graph import MISSING, Datum, Version
from shoal.tasks.state import RuntimeState


class Release(RuntimeState):
    """Frees versions once unneeded and tells workers which copies and mappings to drop."""

    def _release(self, version: Version) -> None:
        if version.released:
            return
        version.released = True
        version.value = MISSING
        version.datum.versions.pop(version.number, None)
        for index in version.holders:
            handle = self._workers.get(index)
            if handle is not None:
                handle.pending_drops.append(version.key)
        self._drop_snapshot(version)
        if version.segment is not None:
            shm.unlink(version.segment.name)
            self._segments.discard(version.segment.name)
            for index in version.mapped_by:
                handle = self._workers.get(index)
                if handle is not None:
                    handle.pending_segment_drops.append(version.segment.name)
        if version.locked_owner:
            owner = version.datum.owner()
            if isinstance(owner, np.ndarray):
                with contextlib.suppress(ValueError):
                    owner.flags.writeable = True

    def _drain_orphans(self) -> None:
        while self._graph.orphans:
            self._forget(self._graph.orphans.pop())

    def _forget(self, datum: Datum) -> None:
        self._graph.forget(datum)
        for version in list(datum.versions.values()):
            if self._graph.unneeded(version):
                self._release(version)

    def _flush_drops(self) -> None:
        for handle in self._workers.values():
            if handle.pending_drops or handle.pending_segment_drops:
                handle.outbox.put(wire.DropMessage(*handle.take_drops()))

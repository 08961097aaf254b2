"""Placement of arrays in shared memory: explicit (RRO), promoted, or first-sight snapshots."""

from __future__ import annotations

import warnings

import numpy as np

from shoal.tasks import shm, wire
from shoal.tasks.errors import SharedMemoryFallbackWarning
from shoal.tasks.graph import Binding, Version
from shoal.tasks.pool import WorkerHandle
from shoal.tasks.state import RuntimeState

#: Automatic promotion ignores arrays smaller than this: pickling them costs less than a segment.
AUTO_SHARE_MIN_BYTES = 256 * 1024


class Placement(RuntimeState):
    """Decides which IN arrays travel through shared memory and creates their segments."""

    def _shared_arg(
        self, binding: Binding, version: Version, value: np.ndarray, handle: WorkerHandle
    ) -> wire.SharedArg | None:
        """The argument as a segment reference, or None to send it another way."""
        if version.segment is None and self._should_share(binding, version, value):
            self._place(version, value, binding.spec.recurrent_read_only)
        if version.segment is not None:
            version.mapped_by.add(handle.index)
            return wire.SharedArg(version.segment)
        if version.snapshot is None and self._should_snapshot(version, value):
            self._take_snapshot(version, value)
        if version.snapshot is not None:
            return wire.SharedArg(version.snapshot, private=True)
        return None

    def _should_share(self, binding: Binding, version: Version, value: np.ndarray) -> bool:
        if value.dtype.hasobject or version.share_refused:
            return False
        if binding.spec.recurrent_read_only:
            return True
        return (
            self.auto_share
            and version.number == 0
            and version.reads_seen >= 2
            and value.nbytes >= AUTO_SHARE_MIN_BYTES
        )

    def _should_snapshot(self, version: Version, value: np.ndarray) -> bool:
        return (
            self.auto_share
            and version.number == 0
            and not version.share_refused
            and not value.dtype.hasobject
            and value.nbytes >= AUTO_SHARE_MIN_BYTES
            and shm.fits(value.nbytes)
        )

    def _take_snapshot(self, version: Version, value: np.ndarray) -> None:
        """First sight of a large caller array: send it as a copy-on-write snapshot."""
        name = shm.segment_name(self.job, version.datum.data_id, version.number) + "-first"
        version.snapshot = self._create(version, name, value)

    def _create(self, version: Version, name: str, value: np.ndarray) -> shm.SegmentRef | None:
        """A new segment holding ``value``, or None (with a warning) to send it by value."""
        self._segments.add(name)
        try:
            return shm.create(name, value)
        except OSError as error:
            self._segments.discard(name)
            version.share_refused = True
            warnings.warn(
                f"could not place a {value.nbytes}-byte array in shared memory ({error}); "
                f"sending it by value instead",
                SharedMemoryFallbackWarning,
                stacklevel=4,
            )
            return None

    def _drop_snapshot(self, version: Version) -> None:
        """Remove the version's snapshot and those retired at promotion."""
        doomed = version.retired + ([] if version.snapshot is None else [version.snapshot])
        version.snapshot = None
        version.retired.clear()
        for snapshot in doomed:
            shm.unlink(snapshot.name)
            self._segments.discard(snapshot.name)

    def _place(self, version: Version, value: np.ndarray, explicit: bool) -> None:
        snapshot = version.snapshot
        if snapshot is not None and shm.holds(snapshot, value):
            # The array is unchanged since its first task: that snapshot becomes the segment.
            version.snapshot = None
            self._publish(version, snapshot, value, explicit)
            return
        if snapshot is not None and version.pending_readers > 1:
            # The program changed the array since, and a task sent that snapshot may not have
            # mapped it yet (the one placed now is a pending reader too): it goes with the version.
            version.retired.append(snapshot)
            version.snapshot = None
        else:
            self._drop_snapshot(version)  # nothing was retired before: a version is placed once
        name = shm.segment_name(self.job, version.datum.data_id, version.number)
        if not shm.fits(value.nbytes):
            version.share_refused = True
            warnings.warn(
                f"not enough free space in {shm.SHM_DIR} for a {value.nbytes}-byte array; "
                f"sending it by value instead",
                SharedMemoryFallbackWarning,
                stacklevel=2,
            )
            return
        segment = self._create(version, name, value)
        if segment is not None:
            self._publish(version, segment, value, explicit)

    @staticmethod
    def _publish(version: Version, segment: shm.SegmentRef, value: np.ndarray, explicit: bool) -> None:
        version.segment = segment
        if not explicit and value.flags.writeable:
            # The segment is a snapshot: writes through the caller's array would go unseen.
            value.flags.writeable = False
            version.locked_owner = True

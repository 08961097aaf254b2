"""Floating-point notes across the proxy: the client's watches, the server's notes.

An ``EXECUTE`` frame's flags carry the conditions the client warns about for that batch
(``fp_signals`` bits; 0: none, the server checks nothing). The server runs the batch under a
watch of those conditions and keeps the notes its engine took; before its next answer (``OK``,
``DATA`` or ``ERROR``) it sends them in a ``NOTES`` frame, per batch by the batch's sequence
number. The server runs frames in order, so an answer to request N means every batch sent
before N has run: the client then hands each such batch's notes to its watch and marks the
watch done, and the frontend warns at the recording lines.
"""

from __future__ import annotations

import collections

from shoal.engine import fp_notes, fp_signals
from shoal.proxy.protocol import WATCH_FLAGS, ProtocolError, server_notes


class RemoteWatches:
    """The client's watches of batches sent and not yet answered for, by sequence number."""

    def __init__(self) -> None:
        self._pending: collections.OrderedDict[int, fp_signals.Watch] = collections.OrderedDict()

    def sent(self, sequence: int, record: fp_signals.Watch | None) -> None:
        """The batch of ``record`` went out as frame ``sequence``."""
        if record is not None:
            self._pending[sequence] = record

    def received(self, batches: list[tuple[int, memoryview]]) -> None:
        """Notes from the server: each batch's are checked against that batch before use."""
        checked = []
        for sequence, text in batches:
            record = self._pending.get(sequence)
            if record is None:
                raise ProtocolError(
                    f"floating-point notes for frame {sequence}, which is no batch awaiting them"
                )
            notes = fp_notes.decode(text, len(record.batch.instructions))
            if any(not fp_signals.category(message) & record.watched for _, message in notes):
                raise ProtocolError(
                    f"floating-point notes for frame {sequence} name a condition it does not watch"
                )
            checked.append((record, notes))
        for record, notes in checked:
            fp_signals.received(record, notes)

    def answered(self, sequence: int) -> None:
        """The server answered request ``sequence``: every batch sent before it has run."""
        pending = self._pending
        while pending:
            first = next(iter(pending))
            if first > sequence:
                return
            pending.pop(first).done = True

    def close(self) -> None:
        """No notes will come any more (the session ended): the watches are done."""
        while self._pending:
            self._pending.popitem(last=False)[1].done = True


class ServerNotes:
    """A session's notes of batches run and not yet sent to the client."""

    def __init__(self) -> None:
        self._kept: list[tuple[int, bytes]] = []

    @staticmethod
    def conditions(flags: int) -> int:
        """The conditions an ``EXECUTE`` frame with ``flags`` asks the server to watch."""
        if flags & ~WATCH_FLAGS:
            raise ProtocolError(f"EXECUTE flags {flags:#x} name no known condition")
        return flags

    def ran(self, sequence: int, record: fp_signals.Watch) -> None:
        """The batch of frame ``sequence`` ran (or failed) under ``record``."""
        fp_signals.forget(record)
        if not record.watched:
            return
        notes = fp_signals.take(record)
        if notes:
            self._kept.append((sequence, fp_notes.encode(notes)))

    def frame_payload(self) -> bytes | None:
        """The ``NOTES`` payload of the notes kept (None: there are none); they are then
        forgotten."""
        if not self._kept:
            return None
        kept, self._kept = self._kept, []
        return server_notes(kept)

"""Floating-point notes of a batch run across the ranks, brought to rank 0.

Rank 0's frontend watches a batch for the conditions NumPy would warn about
(``shoal.engine.fp_signals``); every rank runs its own pieces of the batch on its node engine.
At the start of each batch rank 0 broadcasts the watched conditions (0: none, and nothing more
happens). Every rank then runs its node-engine batches under a watch of those conditions, and
names each note by the instruction of the cluster batch the noted piece was planned from (the
planner says where each instruction's operations begin). At the end of the batch the ranks'
notes are gathered at rank 0 as text (``shoal.engine.fp_notes``), checked against the batch,
combined (a condition met on several ranks is one note) and handed to the watch; the frontend
then warns at the recording lines, once, as NumPy would.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from shoal.bytecode import Batch, Kind, View, spec
from shoal.engine import fp_notes, fp_signals
from shoal.engine.component import Component

ALL_CONDITIONS = fp_signals.DIVIDE | fp_signals.OVER | fp_signals.UNDER | fp_signals.INVALID


class RankNotes:
    """One rank's notes for the cluster batch it runs (``session``: the MPI session)."""

    def __init__(self, session: Any, rank: int) -> None:
        self.session = session
        self.rank = rank
        self.watched = 0
        self._record: fp_signals.Watch | None = None
        self._size = 0
        self._sources: dict[int, int] = {}  # id(node-engine instruction) -> cluster position
        self._ops: list[Any] = []  # keeps those instructions alive while their ids name them
        self._found: dict[tuple[int, str], None] = {}
        self._reductions: set[int] = set()  # positions of the batch's reductions

    def engine(self, inner: Component) -> Component:
        """``inner`` (this rank's node engine) running its batches under this rank's watch."""
        return _Noting(inner, self)

    def claim(self, batch: Batch) -> int:
        """Rank 0, before it sends ``batch``: the conditions the program watches for it (they
        travel with the batch's command)."""
        self._record = fp_signals.claim(batch)
        return self._record.watched & ALL_CONDITIONS if self._record is not None else 0

    def begin(self, batch: Batch, watched: int) -> None:
        """A cluster batch starts on every rank, watching the conditions rank 0 sent."""
        if watched & ~ALL_CONDITIONS or watched < 0:
            raise ValueError(f"rank 0 asked to watch unknown floating-point conditions {watched:#x}")
        if self.rank != 0:
            self._record = None
        self.watched, self._size = watched, len(batch.instructions)
        if watched:
            self._reductions = {position for position, instruction in enumerate(batch.instructions) if _reduces(instruction.op)}

    def planned(self, ops: list[Any], start: int = 0) -> None:
        """This rank's operations for the batch (or for its instructions from ``start`` on: one
        of its parts, :mod:`shoal.cluster.segments`); each names the instruction of its batch
        each of its instructions computes (``Op.positions``)."""
        if not self.watched:
            return
        self._ops.extend(ops)
        sources = self._sources
        for op in ops:
            for instruction, position in zip(op.instructions, op.positions):
                sources[id(instruction)] = start + position

    def ran(self, batch: Batch, record: fp_signals.Watch) -> None:
        """The node engine ran ``batch`` (part of the cluster batch) under ``record``."""
        instructions = batch.instructions
        reductions = self._reductions
        for position, message in fp_signals.take(record):
            source = self._sources.get(id(instructions[position]))
            if source is not None and source >= 0:
                if source in reductions and not _reduces(instructions[position].op):
                    message = _in_reduce(message)  # a merge of partial results: NumPy's reduce said it
                self._found[(source, message)] = None

    def finish(self) -> str | None:
        """Every rank at the end of the batch: the notes go to rank 0, which hands them,
        checked and combined, to the batch's watch. Returns, at rank 0, what was wrong with a
        rank's notes (None: nothing)."""
        if not self.watched:
            return None
        found, record, size = list(self._found), self._record, self._size
        self.watched, self._record, self._found, self._sources, self._ops = 0, None, {}, {}, []
        self._reductions = set()
        texts = self.session.gather_text(fp_notes.encode(found).decode("ascii") if found else None)
        if texts is None or record is None:
            return None
        combined: dict[tuple[int, str], None] = {}
        problems = []
        for rank, text in enumerate(texts):
            try:
                notes = fp_notes.decode((text or "").encode("utf-8"), size)
            except fp_notes.NotesError as error:
                problems.append(f"rank {rank} sent malformed floating-point notes: {error}")
                continue
            combined.update(dict.fromkeys(note for note in notes if fp_signals.category(note[1]) & record.watched))
        fp_signals.received(record, list(combined))
        record.done = True
        return "; ".join(problems) if problems else None


def _reduces(op: str) -> bool:
    try:
        return spec(op).kind is Kind.REDUCTION
    except KeyError:
        return False


def _in_reduce(message: str) -> str:
    """``message`` as NumPy words it for a reduction ("overflow encountered in reduce"): the
    ranks merge their partial results element-wise ("... in add")."""
    head, found, _name = message.rpartition(" encountered in ")
    return f"{head} encountered in reduce" if found else message


class _Noting(Component):
    """A node engine whose batches are watched for the rank's conditions."""

    name = "rank-notes"

    def __init__(self, inner: Component, notes: RankNotes) -> None:
        self.inner = inner
        self.notes = notes

    @classmethod
    def configure(cls, environ: Mapping[str, str] | None = None) -> None:
        return None  # made by RankNotes.engine, never from settings

    def execute(self, batch: Batch) -> None:
        watched = self.notes.watched
        if not watched:
            self.inner.execute(batch)
            return
        record = fp_signals.watch(batch, watched)
        try:
            self.inner.execute(batch)
        finally:
            fp_signals.forget(record)
            self.notes.ran(batch, record)

    def fetch(self, view: View) -> np.ndarray:
        return self.inner.fetch(view)

    def memory(self, view: View, write: bool = False) -> np.ndarray | None:
        return self.inner.memory(view, write)

    def flush(self) -> None:
        self.inner.flush()

    def shutdown(self) -> None:
        self.inner.shutdown()

    def live_bases(self) -> int:
        return self.inner.live_bases()

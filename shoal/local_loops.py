"""Loops of small work on the bases of a component that prefers them run in the program's process.

A component whose batches are planned across the processes of one job (the cluster manager,
:meth:`~shoal.engine.component.Component.prefers_local_loops`) offers no memory, so a row or
element loop over one of its arrays was recorded: a round trip between ranks per row, since each
row reads what the previous one wrote (Gauss-Seidel 1000² at 2 ranks: 1.4 ms a row against
NumPy's 5 µs; ADI 1000² x 2 23 s against 0.11 s). Once ``LOOP_RUN`` small instructions in a row
were recorded (a flush does not end the run there: a loop that reads values back flushes every
few operations):

- a small read (at most ``LOOP_ELEMENTS``) of a base fetches its copy (:mod:`shoal.mirrors`) at
  once, after a flush if recorded work writes the base (as one process holds a base after such
  a flush);
- a small write *takes the base back*: it is fetched whole, released in the component and held
  back here as a new array's data is (``Runtime._deferred``), so the loop's reads and writes are
  NumPy's on it until an instruction names it and it is declared again with those values;
- a copy that has served ``TAKE_BACK_ACCESSES`` reads is taken back the same way (its values
  are the component's: no fetch).

After ``TAKE_BACK_ACCESSES`` small accesses a taken-back base is held (:mod:`shoal.held`:
NumPy's own indexing, as in one process); data held back from its creation is held as one
process holds it. A base uploaded again before that, or whose copy served fewer than
``MIRROR_ACCESSES`` reads before a batch wrote it, is neither copied nor taken back for a loop
again: its loop is cheaper recorded. A batch run at once for a held base whose NumPy views are
alive is followed by a take-back into the held memory, so the views see what the batch made of
it, as NumPy's would.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from shoal import drawn, held
from shoal.array_sizes import below
from shoal.bytecode import View
from shoal.frozen_values import new_instruction
from shoal.interrupts import interrupts_held
from shoal.mirrors import MIRROR_ACCESSES, NOT_AGAIN, copyable

if TYPE_CHECKING:
    from shoal.base_lives import LazyBase
    from shoal.runtime import Runtime

TAKE_BACK_ACCESSES = 64  # small accesses a taken-back base pays for its two whole transfers with
# Accesses of up to this many elements make a loop local: a row or a column of any matrix a copy
# is made for (``MIRROR_BYTES``). Larger views (a plane of a 3-D array, 262,144 elements in
# lattice Boltzmann) are work the ranks share, cheaper recorded than moved to rank 0.
LOOP_ELEMENTS = 1 << 14
# Small instructions in a row before a loop is given its bases: a stencil's boundary writes
# between sweeps (twelve in shallow water's ``reflect``) stay recorded with the sweeps around
# them; a row loop reaches it within a few rows.
LOOP_RUN = 32


class LocalLoops:
    """The :class:`~shoal.runtime.Runtime` methods of this idea (``_taken_back``: base -> small
    accesses since it was taken back, or ``NOT_AGAIN``)."""

    def _local_loop_memory(self: Runtime, view: View, write: bool, touched: int | None = None) -> np.ndarray | None:
        """What :meth:`~shoal.settled_memory.SettledMemory.settle` gives for a component without
        memory: in a run of ``LOOP_RUN`` small instructions (or for a write of a base read from
        its copy), if the component prefers local loops and the access reads or writes
        (``touched``) at most ``LOOP_ELEMENTS``, ``view`` of the copy of its base (a read:
        fetched now, after a flush if the pending batch declares or writes it) or of its values
        taken back (a write); else None (the lock is held; ``memory`` gave None)."""
        engine = self._engine
        base_id = view.base
        # A product's matrix (settled_product reads up to PRODUCT_READ_FACTOR times the
        # threshold): recorded, the ranks would gather it. A view that is large by its elements
        # but small by its bytes (a million-element mask in np.where) is an element-wise
        # operand the ranks compute on where it lives, never fetched whole.
        heavy = not write and not below(view.size, view.dtype.itemsize, self.settled_threshold)
        if engine is None or (not heavy and (view.size if touched is None else touched) > LOOP_ELEMENTS) or not engine.prefers_local_loops():
            return None
        if self._small_run < LOOP_RUN and not heavy and not (write and base_id in self._mirrors):  # a loop reading it writes it
            return None
        base = self.lazy_base(base_id)
        if base is None or not copyable(base) or self._taken_back.get(base_id) == NOT_AGAIN:
            return None
        if write:
            if 0 <= self._taken_back.get(base_id, TAKE_BACK_ACCESSES) < TAKE_BACK_ACCESSES:
                self._taken_back[base_id] = NOT_AGAIN  # uploaded again too soon
                return None
            self._take_back(base)
        else:
            if base_id in self._written or base_id in self._declared:
                self.flush()
            self._mirrored(base_id, MIRROR_ACCESSES)
        return self.memory(view, write)

    def _take_back(self: Runtime, base: LazyBase, into: np.ndarray | None = None) -> None:
        """Fetch ``base`` whole (into ``into``, its held memory, if given), release it in the
        component and hold its values back here until an instruction names it (the lock is
        held)."""
        self.flush()
        values = self._fetch_whole(base)
        if into is not None:
            into[...] = values
            values = into
        self._adopt(base, values, 0 if into is None else TAKE_BACK_ACCESSES)

    def _adopt(self: Runtime, base: LazyBase, values: np.ndarray, accesses: int) -> None:
        """Make ``values`` (the component's, whole, 1-D, writable) the data ``base`` is held
        back with, counting ``accesses``, and release the base in the component (the lock is
        held). Ctrl-C waits until both sides agree where the base lives."""
        base_id = base.id
        with interrupts_held():
            self._pending.instructions.append(new_instruction("release", (), (), (("base", base_id),)))
            self.flush()  # a later batch may declare it again
            self._mirrors.pop(base_id, None)
            self._mirror_reads.pop(base_id, None)
            self._deferred[base_id] = (base.dtype, base.size, values)
            self._taken_back[base_id] = accesses

    def _read_copy(self: Runtime, base_id: int, weight: int) -> np.ndarray | None:
        """Count a read that the copy of base ``base_id`` serves; once it has served
        ``TAKE_BACK_ACCESSES``, if the component prefers local loops, the copy becomes the
        base's data, held: the held memory, else None (the lock is held; no recorded work
        writes the base)."""
        reads = self._mirror_reads[base_id] = self._mirror_reads[base_id] + weight
        if reads < TAKE_BACK_ACCESSES or not self.engine.prefers_local_loops() or self._taken_back.get(base_id) == NOT_AGAIN:
            return None
        base = self.lazy_base(base_id)
        if base is None:
            return None
        copy = self._mirrors[base_id]
        copy.flags.writeable = True  # its own memory (``_fetch_whole``), read-only while it was a copy
        self._adopt(base, copy, TAKE_BACK_ACCESSES)
        return _hold_for_loops(self, base, copy)

    def _hold_taken_back(self: Runtime, base_id: int, data: np.ndarray, weight: int) -> np.ndarray | None:
        """Count a small access to held-back base ``base_id`` for a component without memory:
        a taken-back base is held once it has had ``TAKE_BACK_ACCESSES``, data held back since
        its creation when :func:`shoal.held.due` says so. The held memory, or None (the lock is
        held)."""
        accesses = self._taken_back.get(base_id)
        if accesses is None:
            if not held.due(self, base_id, weight, held.HOLD_BACK_ACCESSES):
                return None
        elif accesses == NOT_AGAIN:
            return None
        elif accesses + weight < TAKE_BACK_ACCESSES:
            self._taken_back[base_id] = accesses + weight
            return None
        self._taken_back[base_id] = TAKE_BACK_ACCESSES
        base = self.lazy_base(base_id)
        if base is None:
            return None
        drawn.spoil(data)  # held, NumPy may write it: the ranks' own draws of it are not its values
        return _hold_for_loops(self, base, data)

    def _resync_taken_back(self: Runtime, kept: list[int]) -> None:
        """After a batch that named held bases whose NumPy views are alive ran at once: those
        held back from a component without memory are taken back again, their held memory
        refreshed with what the batch made of them (the lock is held)."""
        if self.offers_memory():
            return  # the held memory is the component's own (a forked child's engine)
        for base_id in kept:
            memory = self.held.get(base_id)
            base = self.lazy_base(base_id)
            if base_id in self._taken_back and memory is not None and base is not None and base_id not in self._deferred:
                self._take_back(base, memory)


def _hold_for_loops(runtime: Runtime, base: LazyBase, data: np.ndarray) -> np.ndarray | None:
    """Hold ``base`` with ``data`` (:func:`shoal.held.hold`) for loops: views of more than
    ``LOOP_ELEMENTS`` stay lazy, work the ranks share (a 4000 x 64 batch of an MLP's inputs,
    indexed from a held draw, was multiplied at rank 0 on one thread)."""
    kept = held.hold(runtime, base, data)
    if kept is not None:
        base.large = min(base.large, LOOP_ELEMENTS)
    return kept

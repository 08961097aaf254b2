"""Bases held in NumPy memory while a loop of small operations works on them.

A settled view costs 2-12 µs of Shoal's own time per operation against NumPy's 0.3-3 µs, so a
row or element loop over a lazy matrix (Gauss-Seidel, a triangular solve, ADI) ran 4-9x NumPy
with settled views alone. Once the program has done ``HOLD_RUN_PER_ELEMENT`` times the base's
size in settled accesses without recording anything (at least ``HOLD_RUN_MIN``), the base is
*held*: its current values are copied into an ndarray the frontend owns
(:attr:`LazyBase.held`), and indexing an array of that base (``a[i, 1:-1]``, ``a[i] = row``) is
NumPy's own indexing of that memory, returning NumPy's views and scalars; what follows in the
loop is plain NumPy. The copy costs about one element's worth of time per element, and the run
before it has saved more than that.

The first instruction recorded that reads or writes a held base hands it back (:func:`unhold`):
the held memory goes into the pending batch as the data of a new base copied over the old one,
and the base is lazy again. If NumPy views of the held memory are still alive (the program kept
a row), they must keep seeing the base's values, so the base stays held: the held values are
copied into the batch, and a recorded write is run at once and its result copied back into the
held memory, as NumPy would have written it in place.
"""

from __future__ import annotations

import sys
import time
from typing import TYPE_CHECKING

import numpy as np

from shoal.bytecode import BaseDecl, Instruction, View, make_attrs

if TYPE_CHECKING:
    from shoal.runtime import Runtime

# Settled accesses in a row (no instruction recorded) before a base is held: at least this many,
# and at least this many per element of the base times the runtime's ``hold_scale`` (a settled
# access costs about 3 µs more than NumPy's, a copy of an element about 1-3 ns).
HOLD_RUN_MIN = 256
HOLD_RUN_PER_ELEMENT = 1 / 2048
# Bases of more elements than this times ``settled_threshold`` (about the L3 cache in float64) are
# never held: copying 128 MB in and out made the IIR filter and softmax at 4000 x 4000 1.4-2x
# slower than settled views alone, where NumPy's own time per row is larger too.
MAX_HELD_FACTOR = 8
# A hold given back before this many times the time its copy took did not pay: the run needed
# before the next hold grows by SCALE_STEP (up to MAX_SCALE); one that paid halves it (down to
# MIN_SCALE: a program filling a new table per repeat holds each one sooner).
# (4 copies judged a table filled anew per repeat, held for its last two thirds, as not paying
# under load: the edit distance then never held again.)
PAYING_COPIES = 1
SCALE_STEP = 4
MAX_SCALE = 4096
MIN_SCALE = 1 / 16

# References to a held ndarray when no NumPy view of it is alive: the runtime's table, the
# base's attribute, the caller's local name and ``sys.getrefcount``'s argument.
_OWN_REFERENCES = 4


def due(runtime: Runtime, size: int) -> bool:
    """True if the run of settled accesses is long enough to hold a base of ``size`` elements
    (never one of more than ``MAX_HELD_FACTOR`` times the settled threshold)."""
    if size > MAX_HELD_FACTOR * runtime.settled_threshold:
        return False
    run = runtime.direct_run
    return run >= HOLD_RUN_MIN and run >= size * HOLD_RUN_PER_ELEMENT * runtime.hold_scale


def hold(runtime: Runtime, base_id: int, whole: np.ndarray) -> np.ndarray | None:
    """Hold base ``base_id`` whose settled memory is ``whole``: the copy now holding its values,
    or None if the base is not one the runtime can hold (its memory is not its whole buffer)."""
    base = runtime.lazy_base(base_id)
    if base is None or base.size == 0 or whole.nbytes != base.size * base.dtype.itemsize:
        return None
    started = time.perf_counter()
    held = whole.reshape(-1).view(base.dtype).copy()  # the component keeps bytes, or a 2-D array
    now = time.perf_counter()
    base.held = held
    runtime.held[base_id] = held
    runtime.hold_times[base_id] = (now, now - started)
    return held


def view_of(held: np.ndarray, view: View) -> np.ndarray:
    """``view`` of a held base's memory."""
    return np.ndarray(view.shape, view.dtype, held, view.offset, view.strides)


def unhold(runtime: Runtime, base_id: int) -> bool:
    """Put held base ``base_id``'s values back into the pending batch before an instruction that
    reads or writes it is recorded. Returns True if the base stays held
    (NumPy views of it are alive): the caller then runs a recorded write at once and copies the
    result back (:func:`copy_back`)."""
    base = runtime.lazy_base(base_id)
    if base is not None:
        base.held_view = None
    held = runtime.held[base_id]
    alive = sys.getrefcount(held) > _OWN_REFERENCES
    data = held.copy() if alive else held
    pending = runtime.pending
    source = runtime.next_base_id()
    pending.bases.append(BaseDecl(source, held.dtype, held.size))
    pending.data[source] = data
    pending.donated.add(source)
    whole = View(base_id, held.dtype, 0, (held.size,), (held.itemsize,))
    pending.instructions.append(Instruction("copy", (whole,), (View(source, held.dtype, 0, (held.size,), (held.itemsize,)),), make_attrs()))
    pending.instructions.append(Instruction("release", (), (), make_attrs(base=source)))
    runtime.note_written(base_id)
    if alive:
        return True
    del runtime.held[base_id]
    if base is not None:
        base.held = None
    since, copy_seconds = runtime.hold_times.pop(base_id, (0.0, 0.0))
    if time.perf_counter() - since < PAYING_COPIES * copy_seconds:
        runtime.hold_scale = min(MAX_SCALE, runtime.hold_scale * SCALE_STEP)
    else:
        runtime.hold_scale = max(MIN_SCALE, runtime.hold_scale / 2)
    return False


def copy_back(runtime: Runtime, base_id: int) -> None:
    """After a recorded write to a base that stays held: run it and copy the base's new values
    into the held memory, where the program's NumPy views see them."""
    held = runtime.held[base_id]
    runtime.flush(wait=True)
    held[...] = runtime.engine.fetch(View(base_id, held.dtype, 0, (held.size,), (held.itemsize,)))

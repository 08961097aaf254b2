"""Bases held in NumPy memory while a loop of small operations works on them.

A settled view costs 2-12 µs of Shoal's own time per operation against NumPy's 0.3-3 µs, so a
row or element loop over a lazy matrix (Gauss-Seidel, a triangular solve, ADI) ran 4-9x NumPy
with settled views alone. Once the program has made ``HOLD_RUN`` settled accesses in a row
without recording anything, and as many more to the base itself, the base is *held* (a read of a
view at or above the settled threshold, a product's whole matrix, counts as
``HEAVY_READ_WEIGHT`` accesses: BiCG's matrix was held after 14 steps, now after 3): the
component's own memory of it, the very ndarray the engine keeps, is handed to the frontend
(:attr:`LazyBase.held`), and indexing an array of that base (``a[i, 1:-1]``, ``a[i] = row``) is
NumPy's own indexing of that memory, returning NumPy's views and scalars; what follows in the
loop is plain NumPy. Nothing is copied, so a hold costs the same for a base of any size and pays
after a few accesses.

While a base is held no batch names it, so the engine neither reads nor writes its memory. The
first instruction recorded that reads or writes it hands it back (:func:`unhold`): the memory
already holds the program's values, so nothing is recorded for it. If NumPy views of the held
memory are still alive (the program kept a row), the base stays held and the batch runs at once
(``Runtime.record``): the views see a recorded write as NumPy would have written it in place,
and a recorded read sees the values before any later write through a view. A base released
while such views live keeps its memory in the engine until they die (:func:`orphaned`), since
the engine would give released memory to the next base of that size.
"""

from __future__ import annotations

import sys
import weakref
from typing import TYPE_CHECKING

import numpy as np

from shoal.bytecode import View

if TYPE_CHECKING:
    from shoal.base_lives import LazyBase
    from shoal.runtime import Runtime

# Settled accesses in a row (no instruction recorded), and as many more to the base itself,
# before a base is held.
# A hold copies nothing: its cost (about 2 µs, and a weak reference per array indexed) is that
# of one settled access, so a short run is enough to tell a loop of small operations.
HOLD_RUN = 16
# Accesses of its own before a base held back with its data is held, once the run is long: its
# data is held as it is (no declaration, no batch), so a fresh result read by a loop pays off
# after a few reads.
HOLD_BACK_ACCESSES = 4

# References to a held ndarray when no NumPy view of it is alive: the runtime's table, the
# base's attribute, the caller's local name and ``sys.getrefcount``'s argument. Every view made
# of it (and every view of such a view) has it as its NumPy ``.base``: it is an ndarray whose
# own base is a memoryview, where NumPy stops collapsing a chain of views.
_OWN_REFERENCES = 4
_PRUNE_HOLDERS = 32  # lazy arrays noted for a held base before the dead ones are dropped


def due(runtime: Runtime, base_id: int, weight: int = 1, accesses: int | None = None) -> bool:
    """True if base ``base_id`` is to be held at this settled access (counting ``weight``): the
    run of settled accesses is long enough, and this base has had ``accesses`` (by default
    ``HOLD_RUN``) itself since the run was long enough (a fresh small result read once, or a few
    times, stays as it is)."""
    if runtime.direct_run < HOLD_RUN:
        return False
    base = runtime.lazy_base(base_id)
    if base is None:
        return False
    base.accesses += weight
    return base.accesses >= (HOLD_RUN if accesses is None else accesses)


def hold(runtime: Runtime, base: LazyBase, memory: np.ndarray) -> np.ndarray | None:
    """Hold ``base``, whose whole memory in the component is ``memory`` (writable, C-contiguous):
    the ndarray over that memory the frontend indexes from now on, or None if ``memory`` is not
    the base's whole buffer."""
    if base.size == 0 or memory.dtype != base.dtype or memory.size != base.size or not memory.flags.writeable:
        return None
    kept = np.frombuffer(memory.reshape(-1).data, base.dtype)  # no copy; see _OWN_REFERENCES
    base.held = kept
    base.large = max(1, runtime.settled_threshold)
    runtime.held[base.id] = kept
    return kept


def view_of(kept: np.ndarray, view: View) -> np.ndarray:
    """``view`` of a held base's memory."""
    return np.ndarray(view.shape, view.dtype, kept, view.offset, view.strides)


def remember(base: LazyBase, array: object) -> None:
    """Note that lazy ``array`` keeps a view of ``base``'s held memory for its own indexing:
    :func:`forget_views` takes it back before the base is handed back."""
    holders = base.holders
    for ref in holders:
        if ref() is array:
            return
    if len(holders) >= _PRUNE_HOLDERS:
        holders[:] = [ref for ref in holders if ref() is not None]
    holders.append(weakref.ref(array))


def forget_views(base: LazyBase) -> None:
    """Drop the views of the held memory that lazy arrays of ``base`` keep for their indexing."""
    for ref in base.holders:
        array = ref()
        if array is not None:
            array._held = None  # type: ignore[attr-defined]
    base.holders.clear()


def _views_kept(base: LazyBase) -> int:
    """References to ``base``'s held memory that its lazy arrays keep for their indexing (one a
    live array: its view's NumPy ``.base``; :func:`remember` notes each array once)."""
    return sum(1 for ref in base.holders if (array := ref()) is not None and array._held is not None)  # type: ignore[attr-defined]


def views_alive(runtime: Runtime, base_id: int) -> bool:
    """True if NumPy views of held base ``base_id``'s memory are alive (besides those its lazy
    arrays keep for their own indexing)."""
    base = runtime.lazy_base(base_id)
    kept = runtime.held[base_id]
    return sys.getrefcount(kept) > _OWN_REFERENCES + (0 if base is None else _views_kept(base))


def unhold(runtime: Runtime, base_id: int) -> bool:
    """Hand held base ``base_id`` back before an instruction that reads or writes it is recorded.
    Returns True if it stays held (NumPy views of its memory are alive): the caller then runs the
    batch at once."""
    if views_alive(runtime, base_id):
        return True  # the lazy arrays keep their views for the next indexing
    base = runtime.lazy_base(base_id)
    if base is not None:
        forget_views(base)
    del runtime.held[base_id]
    if base is not None:
        base.held = None
    return False


def orphaned(runtime: Runtime, base_id: int) -> bool:
    """On the release of base ``base_id``: True if it was held and NumPy views of its memory
    are still alive; the runtime then records its release only once they are gone."""
    kept = runtime.held.pop(base_id, None)
    if kept is None or sys.getrefcount(kept) <= 2:  # the local name and the argument
        return False
    runtime.orphans[base_id] = kept
    return True


def released_orphans(runtime: Runtime) -> list[int]:
    """The orphaned bases whose NumPy views have all died: their release may be recorded now."""
    orphans = runtime.orphans
    done = [base_id for base_id in list(orphans) if sys.getrefcount(orphans[base_id]) <= 2]  # the table's and the argument
    for base_id in done:
        del orphans[base_id]
    return done


def base_viewed(runtime: Runtime, array: object) -> tuple[int, View] | None:
    """The held base and the :class:`View` of it that NumPy array ``array`` shows, if ``array``
    is a view of a held base's memory (``a[:, k:]`` of a held ``a``) of the base's dtype; else
    None. An operation writing such a view then records on the base instead of copying the
    view's values in and the result back out."""
    held_bases = runtime.held
    if not held_bases or type(array) is not np.ndarray:
        return None
    kept = array.base
    if type(kept) is not np.ndarray:
        return None
    base_id = next((base_id for base_id, memory in held_bases.items() if memory is kept), None)
    if base_id is None:
        return None
    if array.dtype != kept.dtype or array.size == 0:
        return None
    offset = array.__array_interface__["data"][0] - kept.__array_interface__["data"][0]
    return base_id, View(base_id, array.dtype, offset, array.shape, array.strides)


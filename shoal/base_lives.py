"""The end of a base's life: a lazy array's base releases itself when no array refers to it,
and the runtime records a ``release`` instruction for it at the next instruction or flush, with
the NumPy data the pending batch carries for it counted as dead (``SHOAL_FLUSH_BYTES``)."""

from __future__ import annotations

import collections
import weakref
from typing import TYPE_CHECKING

import numpy as np

from shoal import held
from shoal.bytecode import View
from shoal.frozen_values import new_instruction, slot_maker

if TYPE_CHECKING:
    from shoal.runtime import Runtime

# Held-back bases released, queued to be counted, at which the queue is counted at once (also by
# ``shoal/_base_release.c``): a loop whose results NumPy computes may record nothing for long.
DROPPED_COUNTED = 1024


class LazyBase:
    """A base array living in the component; releases itself when no array refers to it."""

    __slots__ = ("__weakref__", "accesses", "dtype", "held", "holders", "id", "large", "runtime", "size")

    def __init__(self, runtime: Runtime, base_id: int, dtype: np.dtype, size: int) -> None:
        self.runtime = runtime
        self.id = base_id
        self.dtype = dtype
        self.size = size
        self.held: np.ndarray | None = None  # its memory, handed to NumPy while a loop holds it (``shoal.held``)
        self.holders: list[weakref.ref] = []  # lazy arrays keeping a view of the held memory
        self.accesses = 0  # settled accesses once a run was long enough to hold (``shoal.held``)
        self.large = 0  # while held: views of at least this many elements go back to lazy work

    def whole_view(self) -> View:
        """The view of all of this base: 1-D, contiguous, from its first element."""
        return View(self.id, self.dtype, 0, (self.size,), (self.dtype.itemsize,))

    def __del__(self) -> None:
        runtime = self.runtime
        self.held = None
        if runtime is not None and not runtime.closed:
            runtime.release(self.id)


#: ``make_base(runtime, id, dtype, size, [])`` is ``LazyBase(runtime, id, dtype, size)`` without
#: its ``__init__`` (the list: its holders, new for each base).
make_base = slot_maker(LazyBase, ("runtime", "id", "dtype", "size", "holders", "held", "accesses", "large"), (None, 0, 0))


class BaseLives:
    """:meth:`release`, :meth:`_record_releases` and :meth:`run_if_carrying` of
    :class:`~shoal.runtime.Runtime`."""

    def release(self: Runtime, base_id: int) -> None:
        """Note the end of a base's life. It may run inside garbage collection on any thread,
        also one the component runs a batch on while this thread waits for it holding the lock:
        it never takes the lock; the next instruction or flush records the release. A base still
        held back (``_deferred``, never named by an instruction) drops its data at once: a loop
        whose results NumPy computes (``_settled.py``) may record nothing for a long time, and
        holding every result until then would make its memory grow without bound."""
        self._bases.pop(base_id, None)
        if self._deferred.pop(base_id, None) is not None:  # one dict operation: atomic under the GIL
            self.held.pop(base_id, None)  # held as its own data: NumPy views of it keep that alive
            dropped = self._dropped
            dropped.append(base_id)
            if len(dropped) >= DROPPED_COUNTED:  # a loop that records nothing for long never drains it
                self.stats.bases_released += _drain(dropped)
            return
        if self.held and held.orphaned(self, base_id):
            return
        self._released.append(base_id)

    def _record_releases(self: Runtime) -> None:
        """Record a ``release`` instruction for every base noted dead (the lock is held)."""
        if self.orphans:
            self._released.extend(held.released_orphans(self))
        count = _drain(self._dropped)
        released = self._released
        pending = self._pending
        append = pending.instructions.append
        while released:
            base_id = released.popleft()
            append(new_instruction("release", (), (), (("base", base_id),)))
            count += 1
            if pending.data:
                data = pending.data.get(base_id)
                if data is not None:
                    self._dead_bytes += data.nbytes
        self.stats.bases_released += count

    def run_if_carrying(self: Runtime) -> None:
        """Flush if the pending batch carries ``flush_bytes`` of NumPy data for bases already
        released (an operator's temporary, once its lazy array died)."""
        with self._lock:
            if self._released or self._dropped:
                self._record_releases()
            if self._dead_bytes >= self.flush_bytes:
                self.flush()


def _drain(dropped: collections.deque[int]) -> int:
    """Empty ``dropped`` (another thread's release may append meanwhile); how many it held."""
    count = 0
    try:
        while True:
            dropped.popleft()
            count += 1
    except IndexError:
        return count

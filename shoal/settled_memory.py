"""Where a lazy base's values are NumPy memory the frontend may read or write in place: the
component's memory of a settled base (also while NumPy holds it, :mod:`shoal.held`), or the data
a base was declared (or held back) with. The :class:`~shoal.runtime.Runtime` methods of that
idea."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from shoal import drawn, held
from shoal.bytecode import View
from shoal.engine import Component

if TYPE_CHECKING:
    from shoal.runtime import Runtime

# A small view of a base that recorded work still changes is read (or written) in place after a
# flush once this many small instructions in a row were recorded: the program is in a loop of
# small operations, which recording makes slow; a small write amid whole-array work (a boundary
# row of a stencil) is recorded and fuses with it.
SETTLING_RUN = 8

# A product with a small result reads operands of up to this many times ``settled_threshold``
# elements at once in NumPy: a matrix-vector product is one pass over the matrix in BLAS, and
# recording it cut the row loops around it into batches of small recorded work (BiCG, covariance,
# Cholesky); at 4000 x 4000 BLAS's pass also beat the node engine's blocked product (BiCG 1.05x
# NumPy against 1.84x, docs/decisions.md). An instruction with a small result reading up to as
# much counts as small work towards ``SETTLING_RUN``: once settled, the loop runs in NumPy.
PRODUCT_READ_FACTOR = 64
HEAVY_READ_WEIGHT = 4  # settled accesses a read of a view at or above the threshold counts for (a product's matrix)


class SettledMemory:
    """:meth:`memory` and :meth:`settle` of :class:`~shoal.runtime.Runtime`."""

    def memory(self: Runtime, view: View, write: bool = False) -> np.ndarray | None:
        """The component's live ndarray for ``view`` if no recorded instruction still changes its
        base (with ``write``: none reads it either), else None. Reading it, or writing it, is then
        what running the recorded work first and reading, or recording the write, would do."""
        with self._lock:
            base = view.base
            kept = self.held.get(base)
            if kept is not None:
                return held.view_of(kept, view)
            if base in self._written or (write and base in self._read) or not self.settled_threshold:
                return None
            deferred = self._deferred.get(base)
            if deferred is not None:
                return self._deferred_view(view, deferred[2], write)
            weight = self._counted(view)
            cache = self._writable if write else self._settled
            whole = cache.get(base)
            if whole is None:
                if base in self._declared:  # the data it is declared with is its memory until the flush
                    if write and base not in self._pending.donated:
                        return None
                    whole = self._declared_data(view, write)
                    if whole is None:
                        return None
                else:
                    engine = self._engine
                    if engine is None:
                        return None
                    memory = engine.memory(view, write)
                    whole = None if memory is None else memory.base
                    if memory is None and not write and not _offers_memory(engine):
                        whole = self._mirrored(base, weight)  # a copy of the base fetched once (shoal.mirrors)
                        if whole is None:
                            return None
                    elif not (type(whole) is np.ndarray and whole.flags.c_contiguous):  # not the base's whole buffer
                        return memory
                cache[base] = whole
                if write:  # the component may have given the base memory of its own to write
                    self._settled[base] = whole
            elif whole.dtype != view.dtype and base in self._declared:
                return None
            if self._mirrors and base in self._mirrors:
                kept = self._read_copy(base, weight)  # counted; the copy taken over for a long loop (shoal.local_loops)
                if kept is not None:
                    return held.view_of(kept, view)
            elif base not in self._declared and held.due(self, base, weight):
                kept = self._hold(base)
                if kept is not None:
                    return held.view_of(kept, view)
            return np.ndarray(view.shape, view.dtype, whole, view.offset, view.strides)  # positional: 2.5x faster than by keyword

    def _counted(self: Runtime, view: View) -> int:
        """Count a settled access to ``view`` in the run towards a hold; returns its weight
        (``HEAVY_READ_WEIGHT`` for a view at or above the settled threshold, else 1)."""
        weight = HEAVY_READ_WEIGHT if view.size >= self.settled_threshold else 1
        self.direct_run += weight
        return weight

    def held_views_alive(self: Runtime, base_id: int) -> bool:
        """True if base ``base_id`` is held and NumPy views of its memory are alive."""
        with self._lock:
            return base_id in self.held and held.views_alive(self, base_id)

    def offers_memory(self: Runtime) -> bool:
        """True if the component hands out the memory of settled bases (it runs in this process)."""
        return _offers_memory(self.engine)

    def held_view(self: Runtime, view: View) -> np.ndarray | None:
        """``view`` of its base's held memory, for the program to keep (a row ``a[i]`` that an
        indexing loop passes on), if the base is held or this access, counted as a settled one,
        completes the run that holds it (:func:`shoal.held.due`); else None. A base the pending
        batch declares or writes is flushed first, as an element read flushes. Only held memory
        is handed out: the component may reuse a settled base's memory once it is released."""
        with self._lock:
            base = view.base
            memory = self.memory(view)  # counts the access where the base is settled
            if memory is not None:
                if base in self.held:
                    return memory
                if base not in self._declared:
                    return None  # counted and not due yet
            elif base not in self._written or base in self._deferred:
                return None
            else:
                self.direct_run += 1
            if not held.due(self, base):
                return None
            self.flush()
            kept = self._hold(base)
            return None if kept is None else held.view_of(kept, view)

    def settle(self: Runtime, view: View, write: bool = False, element: bool = False, touched: int | None = None) -> np.ndarray | None:
        """Like :meth:`memory`, but where recorded work stands in the way and the component offers
        its memory, that work runs first (a flush) when ``element`` is true (one element is read)
        or the last ``SETTLING_RUN`` recorded instructions were all small (small results, reading
        up to ``PRODUCT_READ_FACTOR`` times the threshold: a column loop of matrix-vector
        products settles too). An element loop over a freshly computed array, or a row loop
        filling a new one, then costs one flush, not a recorded instruction per element or row;
        an element read that flushed holds the base at once (:mod:`shoal.held`), so the reads
        after it are NumPy's indexing; a batch of whole-array work (a stencil's loop body writing
        a boundary row) is not cut for a small view. ``touched``: the elements a write of part of
        ``view`` changes (by default all of them). A component that offers no memory may prefer
        to give the loop the base (:mod:`shoal.local_loops`)."""
        with self._lock:
            memory = self.memory(view, write)
            if memory is not None or not self.settled_threshold:
                return memory
            engine = self._engine
            if engine is not None and not _offers_memory(engine):
                return self._local_loop_memory(view, write, touched)  # shoal.local_loops
            base = view.base
            if base not in self._written and base not in self._declared and not (write and base in self._read):
                return None  # the component refused it
            if engine is None or (not element and self._small_run < SETTLING_RUN):
                return None
            self.flush()
            if element and base not in self._declared and base not in self.held:
                kept = self._hold(base)  # a fresh result read element by element: NumPy indexes it from now on
                if kept is not None:
                    return held.view_of(kept, view)
            return self.memory(view, write)

    def _hold(self: Runtime, base_id: int) -> np.ndarray | None:
        """Hold settled base ``base_id`` (:mod:`shoal.held`): its memory in the component, made
        writable, handed to NumPy; None if the component does not offer it. Recorded work that
        still reads the base runs first: the program may write the memory next."""
        base = self.lazy_base(base_id)
        engine = self._engine
        if base is None or engine is None or base.size == 0:
            return None
        if base_id in self._read:
            self.flush()
        memory = engine.memory(base.whole_view(), write=True)
        if memory is None or type(memory) is not np.ndarray or not memory.flags.c_contiguous:
            return None
        return held.hold(self, base, memory)

    def hold_for_tasks(self: Runtime, base_id: int) -> None:
        """Hold base ``base_id`` now (after every recorded instruction ran), if the component
        offers its memory: a lazy array passed to a task (``shoal.numpy._task_values``)."""
        with self._lock:
            if base_id in self._deferred:
                self._declare_deferred(base_id)
            self.flush(wait=True)
            base = self.lazy_base(base_id)
            if base is not None and base.held is None:
                self._hold(base_id)

    def _deferred_view(self: Runtime, view: View, data: np.ndarray, write: bool) -> np.ndarray | None:
        """``view`` of a held-back base's data (its memory until an instruction names it), if
        the data is of ``view``'s dtype. Once the run of settled accesses is long enough the base
        is declared to the component (given that array) and its memory there is held; for a
        component that offers no memory the data stays here (read and written by NumPy) until
        an instruction names the base."""
        if data.dtype != view.dtype:
            return None
        if write:
            drawn.spoil(data)
        weight = self._counted(view)
        engine = self._engine
        if engine is not None and not _offers_memory(engine):  # the data stays here until an instruction names it
            if data.size:
                kept = self._hold_taken_back(view.base, data, weight)  # shoal.local_loops
                if kept is not None:
                    return held.view_of(kept, view)
        elif engine is not None and data.size and held.due(self, view.base, weight, held.HOLD_BACK_ACCESSES):
            base = self.lazy_base(view.base)
            if base is not None:
                # Its data is the memory the engine takes over when an instruction names it (a
                # donated, contiguous, writable array is not copied): held as it is, without a
                # declaration and a flush that a fresh result read in a loop paid every time.
                drawn.spoil(data)
                kept = held.hold(self, base, data)
                if kept is not None:
                    return held.view_of(kept, view)
            self._declare_deferred(view.base)
            self.flush()
            kept = self._hold(view.base)
            if kept is not None:
                return held.view_of(kept, view)
            return self.memory(view, write)
        return np.ndarray(view.shape, view.dtype, data, view.offset, view.strides)

    def _declared_data(self: Runtime, view: View, write: bool = False) -> np.ndarray | None:
        """The data a base declared in the pending batch starts with, if that data is what the
        component will hold (``view``'s dtype, contiguous). Data given away (donated) may be
        written: the component receives what it holds at the flush."""
        data = self._pending.data.get(view.base)
        if data is None or data.dtype != view.dtype or not data.flags.c_contiguous or (write and not data.flags.writeable):
            return None
        if write:
            drawn.spoil(data)
        return data


def _offers_memory(engine: Component) -> bool:
    return type(engine).memory is not Component.memory

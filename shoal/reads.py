"""What the frontend reads back from the component: a view's current contents for the program
(:meth:`Reads.read`), and a base's whole values for the frontend to keep (:meth:`Reads._fetch_whole`:
a fork's hand-over, a copy for small reads, a base taken back for a loop). The
:class:`~shoal.runtime.Runtime` methods of that idea."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from shoal import trace
from shoal.bytecode import View, reordered
from shoal.frozen_values import new_view

if TYPE_CHECKING:
    from shoal.base_lives import LazyBase
    from shoal.runtime import Runtime


class Reads:
    """:meth:`read` and :meth:`_fetch_whole` of :class:`~shoal.runtime.Runtime`."""

    def read(self: Runtime, view: View) -> np.ndarray:
        """The current contents of ``view`` as a new ndarray (recorded work that writes its base
        runs first), in the view's axis order where it is dense in one (``a.T + 1`` comes back
        Fortran-ordered, as NumPy's; a strided view C-ordered, as NumPy's copy)."""
        order = memory_order(view)
        asked = view if order is None else new_view(view.base, view.dtype, view.offset, tuple(view.shape[a] for a in order), tuple(view.strides[a] for a in order))
        if not asked.is_contiguous():
            order, asked = None, view
        with self._lock:
            settled = self.memory(view)
            if settled is not None:
                return settled.copy(order="C" if order is None else "K")  # also a held base's values
            if view.base in self._deferred:
                self._declare_deferred(view.base)
            self.flush()
            tracer = trace.TRACER
            if tracer is None:
                contents = self.engine.fetch(asked)
            else:
                with tracer.span("fetch", "communication", {"shape": list(view.shape)}):
                    contents = self.engine.fetch(asked)
            self._warn(settled=True)
            return contents if order is None else contents.transpose(np.argsort(order))

    def _fetch_whole(self: Runtime, base: LazyBase) -> np.ndarray:
        """``base``'s values in the component after every batch executed so far: one-dimensional,
        C-contiguous, owned by the frontend and writable (a copy only where the component's
        answer is not that already)."""
        return np.require(self.engine.fetch(base.whole_view()), base.dtype, ("C", "W", "O")).reshape(-1)


def memory_order(view: View) -> tuple[int, ...] | None:
    """The axes of ``view`` from the largest stride to the smallest, if that is not their order
    and every stride is positive; else None."""
    strides = view.strides
    if len(strides) < 2 or min(strides) <= 0 or not reordered(strides):
        return None
    return tuple(sorted(range(len(strides)), key=lambda axis: -strides[axis]))

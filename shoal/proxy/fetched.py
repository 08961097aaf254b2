"""Arrays the client has fetched and the server has not changed since (paper 004 §3.2).

Both sides know where data is: a view read once is served again from here until a batch writes
or releases its base, so reading an unchanged array twice crosses the network once. The cache
keeps at most ``capacity`` bytes, least recently used first out.
"""

from __future__ import annotations

from collections import OrderedDict

import numpy as np

from shoal.bytecode import Batch, View

DEFAULT_CAPACITY = 256 << 20


class FetchedArrays:
    """Copies of fetched views, dropped when a batch may have changed their base."""

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self.capacity = capacity
        self.nbytes = 0
        self._arrays: OrderedDict[View, np.ndarray] = OrderedDict()
        self._by_base: dict[int, set[View]] = {}

    def get(self, view: View) -> np.ndarray | None:
        """A new copy of ``view``'s contents if they are known, else None."""
        array = self._arrays.get(view)
        if array is None:
            return None
        self._arrays.move_to_end(view)
        return array.copy()

    def put(self, view: View, array: np.ndarray) -> None:
        if array.nbytes > self.capacity // 4 or view in self._arrays:
            return
        self._arrays[view] = array.copy()
        self._by_base.setdefault(view.base, set()).add(view)
        self.nbytes += array.nbytes
        while self.nbytes > self.capacity:
            oldest, dropped = self._arrays.popitem(last=False)
            self._forget(oldest, dropped)

    def changed_by(self, batch: Batch) -> None:
        """Forget every view of a base that ``batch`` writes or releases."""
        for instruction in batch.instructions:
            if instruction.op == "release":
                self._drop_base(instruction.attr("base"))
            for view in instruction.outputs:
                self._drop_base(view.base)

    def _drop_base(self, base: int) -> None:
        for view in self._by_base.pop(base, ()):
            self._forget(view, self._arrays.pop(view))

    def _forget(self, view: View, array: np.ndarray) -> None:
        self.nbytes -= array.nbytes
        views = self._by_base.get(view.base)
        if views is not None:
            views.discard(view)
            if not views:
                del self._by_base[view.base]

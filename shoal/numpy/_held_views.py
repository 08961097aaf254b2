"""NumPy views of held bases given to a lazy operation as its output.

Indexing a held base (:mod:`shoal.held`) returns NumPy's views of the engine's memory, so in a
loop like Gram-Schmidt's ``a[:, k + 1 :] -= np.outer(q[:, k], r[k, k + 1 :])`` the target is a
NumPy view and the right-hand side lazy. Taken as NumPy data, the view would be copied in as an
operand and the result copied back out: two more passes over it than NumPy makes. Instead the
operation records on the held base itself; since the view is alive, the base stays held and the
batch runs at once (``Runtime.record``), so the view holds NumPy's result when the call returns.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from shoal import held
from shoal import runtime as _runtime
from shoal.numpy._lazy import ndarray


def on_held_bases(outs: tuple[Any, ...], inputs: tuple[Any, ...]) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """``outs`` and ``inputs`` with NumPy views of held bases as lazy arrays of those bases, if
    one of ``outs`` is such a view; else both as given."""
    if not any(type(out) is np.ndarray for out in outs):
        return outs, inputs
    runtime = _runtime.current()
    if not runtime.held:
        return outs, inputs
    lazy_outs = tuple(_lazy_view(runtime, out) for out in outs)
    if all(lazy is out for lazy, out in zip(lazy_outs, outs)):
        return outs, inputs
    return lazy_outs, tuple(_lazy_view(runtime, value) for value in inputs)


def _lazy_view(runtime: _runtime.Runtime, value: Any) -> Any:
    found = held.base_viewed(runtime, value)
    if found is None:
        return value
    base = runtime.lazy_base(found[0])
    if base is None:
        return value
    return ndarray._wrap(base, found[1])

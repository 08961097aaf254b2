"""Large element-wise work of a direct batch, split by rows over the engine's threads.

A batch below the direct-work bound runs instruction by instruction on one thread, as NumPy
would: a row loop's rank-1 update (``a[:, k + 1:] -= np.outer(q, r)`` at 1000 x 1000) gained
nothing from the engine's second core, while planning it into blocks costs more than the update
(0.7 ms of planning and 0.8 ms of scheduling a batch, against 0.75 ms of work). An element-wise
call whose rows are independent (its output overlaps no operand except as that very view) is
split instead into one share of rows per thread: each thread calls the same NumPy loop on its
rows, so every element is computed from the same operands as in the whole call, bit for bit.

Each share runs under its own floating-point state (NumPy's error state is per thread) and
notes what it met; a condition met in several shares is reported once, as NumPy's one call
reports it (the notes are kept once per instruction and condition). The first error in row
order is raised once every share has finished.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from shoal.engine.blocks.thread_pool import WorkerPool
from shoal.engine.node.run.storage import Storage

# Elements a thread's share must hold to be worth a handover: a plain operation streams 8 MB
# from the 32 MiB L3 in about 0.12 ms, which two threads do no faster; a chunked pair makes a
# temporary and applies it, twice the work per element (measured, docs/decisions.md).
CALL_SHARE = 1 << 20
PAIR_SHARE = 1 << 18
NUMERIC = frozenset("biufc")  # dtype kinds whose loops the rows can be cut for


def sharing(pool: WorkerPool | None, storage: Storage, base: int) -> WorkerPool | None:
    """``pool`` for a call writing ``base`` if the base has memory already, else None: a new
    output's pages are faulted in by the call, and two threads faulting together lost (CSR at
    60,000 rows 0.041 -> 0.048 s, docs/decisions.md). Asked before the output is allocated."""
    return pool if storage.has_memory(base) else None


def shares(pool: WorkerPool | None, shape: tuple[int, ...], share: int) -> list[tuple[int, int]]:
    """Row ranges, one per thread and each of at least ``share`` elements, of an output of
    ``shape`` (one range: run it whole)."""
    rows = shape[0] if shape else 1
    parts = 1 if pool is None else min(pool.threads, rows, math.prod(shape) // share)
    if parts < 2:
        return [(0, rows)]
    return [(rows * part // parts, rows * (part + 1) // parts) for part in range(parts)]


def run_shares(pool: WorkerPool | None, ranges: list[tuple[int, int]], run: Callable[[int, int], Any]) -> list[Any]:
    """``run(start, stop)`` for every range, at once; their results in order. The first error
    in row order is raised once every share has finished."""
    if len(ranges) == 1 or pool is None:
        return [run(start, stop) for start, stop in ranges]
    results: list[Any] = [None] * len(ranges)

    def share(part: int) -> Callable[[], None]:
        def call() -> None:
            results[part] = run(*ranges[part])

        return call

    errors = pool.each([share(part) for part in range(len(ranges))])
    for error in errors:
        if error is not None:
            raise error
    return results


def rows_of(value: Any, ndim: int, start: int, stop: int) -> Any:
    """``value``'s share of output rows ``[start, stop)`` (broadcast operands stay whole)."""
    if not isinstance(value, np.ndarray):
        return value
    axis = value.ndim - ndim
    if axis < 0 or value.shape[axis] == 1:
        return value
    index = [slice(None)] * value.ndim
    index[axis] = slice(start, stop)
    return value[tuple(index)]


def independent(target: np.ndarray, reads: Sequence[Any], own: Sequence[Any] = ()) -> bool:
    """True if writing ``target`` a share of rows at a time changes no value another share
    reads: numeric operands only; ``reads`` overlap none of it, and ``own`` (the writing call's
    operands) only as the very same elements."""
    for value in (*reads, *own):
        if isinstance(value, np.ndarray) and value.dtype.kind not in NUMERIC:
            return False
    for value in reads:
        if isinstance(value, np.ndarray) and np.may_share_memory(target, value):
            return False
    for value in own:
        if isinstance(value, np.ndarray) and np.may_share_memory(target, value) and not same_elements(target, value):
            return False
    return True


def same_elements(target: np.ndarray, value: np.ndarray) -> bool:
    """True if ``value`` is ``target``'s memory through the same geometry."""
    return (
        value.shape == target.shape
        and value.strides == target.strides
        and value.dtype == target.dtype
        and value.__array_interface__["data"][0] == target.__array_interface__["data"][0]
    )

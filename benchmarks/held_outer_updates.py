"""Rank-one updates of a held matrix through NumPy views, under NumPy and Shoal (ms per update).

A ``--side`` x ``--side`` matrix is made lazy, settled and held (element reads: ``shoal/held.py``),
then updated ``--steps`` times as Gram-Schmidt does, ``a[:, k + 1:] -= np.outer(q, r[k + 1:])``:
``a[:, k + 1:]`` is NumPy's view of the held memory, so each update runs its batch before the
statement ends, while the outer product is still alive (``chunked_pairs.py``). The ``read``
pattern also reads an element of each outer product afterwards, so each one is needed whole.
NumPy and Shoal alternate within each repetition (``side_by_side``); the report gives medians per
update and checks that both computed the same checksum.

Run: ``.venv/bin/python -m benchmarks.held_outer_updates [--side 1000] [--steps 100] [--repeats 7]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from types import ModuleType

from benchmarks.side_by_side import measured


def updates(np: ModuleType, side: int, steps: int, read: bool) -> tuple[float, float]:
    """Seconds per update and the checksum, for ``steps`` updates of a fresh held matrix."""
    rng = np.random.default_rng(1)
    a, q, r = rng.random((side, side)), rng.random(side), rng.random(side)
    total = sum(float(a[i, i]) for i in range(64))  # settled reads: the matrix is held
    start = time.perf_counter()
    for k in range(steps):
        outer = np.outer(q, r[k + 1 :])
        a[:, k + 1 :] -= outer
        if read:
            total += float(outer[k, 0])
    total += float(a[side - 1, side - 1])
    return (time.perf_counter() - start) / steps, total


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--side", type=int, default=1000)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args(argv)
    print("| pattern | NumPy ms | Shoal ms | ratio |")
    print("|---|---:|---:|---:|")
    for read in (False, True):
        results = measured(args.repeats, lambda np, read=read: updates(np, args.side, args.steps, read))
        sums = {label: {checksum for _, checksum in runs} for label, runs in results.items()}
        if sums["numpy"] != sums["shoal"]:
            raise SystemExit(f"checksums differ: {sums}")
        numpy_ms, shoal_ms = (statistics.median(t for t, _ in results[label]) * 1e3 for label in ("numpy", "shoal"))
        name = "outer product read again" if read else "outer product dropped"
        print(f"| {name} | {numpy_ms:.3f} | {shoal_ms:.3f} | {shoal_ms / numpy_ms:.2f}x |")


if __name__ == "__main__":
    main()

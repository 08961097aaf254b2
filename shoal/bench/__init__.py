"""Side-by-side benchmarks of the examples under NumPy, numexpr, Dask and Shoal."""

from __future__ import annotations


def main(argv: list[str] | None = None) -> int | None:
    """``python -m shoal.bench``: see :mod:`shoal.bench.cli` (imported here, not with the
    package, so that ``python -m shoal.bench.fused`` runs its module only once)."""
    from shoal.bench.cli import main as run

    return run(argv)


__all__ = ["main"]

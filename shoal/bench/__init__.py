"""Side-by-side benchmarks of the examples under NumPy, numexpr, Dask and Shoal."""

from shoal.bench.cli import main

__all__ = ["main"]

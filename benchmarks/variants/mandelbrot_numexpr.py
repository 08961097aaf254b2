"""Mandelbrot escape counts (examples/mandelbrot.py) with each iteration evaluated by numexpr.

Usage: python mandelbrot_numexpr.py [SIZE] [--iterations N]
"""

import numexpr as ne
import numpy as np
from _example import load_example

example = load_example("mandelbrot")


def escape_counts(c: np.ndarray, max_iterations: int) -> np.ndarray:
    """Iterations each point of ``c`` stays bounded, up to ``max_iterations``."""
    state = {"c": c, "z": np.zeros_like(c), "counts": np.zeros(c.shape, dtype=np.int64)}
    for _ in range(max_iterations):
        state["bounded"] = ne.evaluate("real(z)**2 + imag(z)**2 <= 4.0", local_dict=state)
        ne.evaluate("counts + bounded", local_dict=state, out=state["counts"])
        state["z"] = ne.evaluate("where(bounded, z * z + c, z)", local_dict=state)
    return state["counts"]


if __name__ == "__main__":
    example.escape_counts = escape_counts
    example.main()

"""Five-point Jacobi stencil (examples/jacobi_stencil.py) with the sweep evaluated by numexpr.

Usage: python jacobi_stencil_numexpr.py [SIZE] [--iterations N] [--seed S]
"""

import numexpr as ne
import numpy as np
from _example import load_example

example = load_example("jacobi_stencil")


def smooth(grid: np.ndarray, iterations: int) -> np.ndarray:
    """Apply ``iterations`` Jacobi sweeps to the interior of ``grid`` in place and return it."""
    work = np.empty((grid.shape[0] - 2, grid.shape[1] - 2))
    neighbours = {
        "center": grid[1:-1, 1:-1],
        "north": grid[:-2, 1:-1],
        "south": grid[2:, 1:-1],
        "west": grid[1:-1, :-2],
        "east": grid[1:-1, 2:],
    }
    for _ in range(iterations):
        ne.evaluate("0.2 * (center + north + south + west + east)", local_dict=neighbours, out=work)
        grid[1:-1, 1:-1] = work
    return grid


if __name__ == "__main__":
    example.smooth = smooth
    example.main()

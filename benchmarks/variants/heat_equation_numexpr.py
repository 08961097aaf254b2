"""Heat equation (examples/heat_equation.py) with each sweep and its convergence sum in numexpr.

Usage: python heat_equation_numexpr.py [SIZE] [--epsilon E] [--max-iterations N]
"""

import numexpr as ne
import numpy as np
from _example import load_example

example = load_example("heat_equation")


def solve(size: int, epsilon: float, max_iterations: int) -> tuple[np.ndarray, int]:
    """Return the converged (size+2)-square grid, boundary included, and the sweeps it took."""
    grid = np.zeros((size + 2, size + 2))
    grid[:, 0] = -273.15
    grid[:, -1] = -273.15
    grid[-1, :] = -273.15
    grid[0, :] = 40.0

    arrays = {
        "center": grid[1:-1, 1:-1],
        "north": grid[:-2, 1:-1],
        "south": grid[2:, 1:-1],
        "west": grid[1:-1, :-2],
        "east": grid[1:-1, 2:],
        "work": np.empty((size, size)),
    }
    center = arrays["center"]

    delta = epsilon + 1.0
    iterations = 0
    while delta > epsilon and iterations < max_iterations:
        ne.evaluate(
            "0.2 * (center + north + south + east + west)", local_dict=arrays, out=arrays["work"]
        )
        # numexpr reductions run on one thread; the element-wise part is threaded, NumPy sums.
        delta = float(np.sum(ne.evaluate("abs(work - center)", local_dict=arrays))) / center.size
        center[:] = arrays["work"]
        iterations += 1
    return grid, iterations


if __name__ == "__main__":
    example.solve = solve
    example.main()

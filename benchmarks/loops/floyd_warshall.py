"""Floyd-Warshall all-pairs shortest paths, one intermediate vertex per iteration.

Usage: python floyd_warshall.py [SIZE] [--repeat R] [--steps N] [--seed S]   (N: intermediate vertices)
"""

import argparse
import time

import numpy as np


def floyd_warshall(path: np.ndarray, steps: int) -> np.ndarray:
    """Shortest paths through the first ``steps`` vertices."""
    for k in range(steps):
        path = np.minimum(path, path[:, k, np.newaxis] + path[np.newaxis, k, :])
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=1000, help="vertices")
    parser.add_argument("--steps", type=int, default=None, help="intermediate vertices")
    parser.add_argument("--repeat", type=int, default=1, help="times the whole computation runs")
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    n = args.size
    weights = rng.integers(1, 100, size=(n, n)).astype(np.float64)
    np.fill_diagonal(weights, 0.0)
    float(weights[0, 0])  # the set-up runs before the timer also where it is lazy
    steps = n if args.steps is None else min(n, args.steps)

    start = time.perf_counter()
    checksum = 0.0
    for _ in range(args.repeat):
        checksum += float(np.sum(floyd_warshall(weights, steps)))
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

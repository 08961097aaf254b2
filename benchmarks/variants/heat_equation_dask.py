"""Heat equation (examples/heat_equation.py) as a Dask array: each sweep is a ``map_overlap``
(halo of one cell) persisted together with its convergence sum, threaded scheduler.

Usage: python heat_equation_dask.py [SIZE] [--epsilon E] [--max-iterations N] [--chunk C]
                                    [--scheduler-address tcp://HOST:PORT]
"""

import argparse
import time

import dask
import dask.array as da
import numpy as np


def sweep(block: np.ndarray) -> np.ndarray:
    """One sweep of a block with its one-cell halo; the outermost ring stays as it was."""
    swept = block.copy()
    swept[1:-1, 1:-1] = 0.2 * (
        block[1:-1, 1:-1] + block[:-2, 1:-1] + block[2:, 1:-1] + block[1:-1, 2:] + block[1:-1, :-2]
    )
    return swept


def solve(size: int, epsilon: float, max_iterations: int, chunk: int) -> tuple[da.Array, int]:
    """Return the converged (size+2)-square grid, boundary included, and the sweeps it took."""
    plate = np.zeros((size + 2, size + 2))
    plate[:, 0] = -273.15
    plate[:, -1] = -273.15
    plate[-1, :] = -273.15
    plate[0, :] = 40.0
    grid = da.from_array(plate, chunks=chunk)

    delta = epsilon + 1.0
    iterations = 0
    while delta > epsilon and iterations < max_iterations:
        swept = grid.map_overlap(sweep, depth=1, boundary="none", dtype=grid.dtype)
        # The boundary never changes, so the change summed over the whole grid is the interior's.
        change = da.sum(da.abs(swept - grid))
        grid, change = dask.persist(swept, change)
        delta = float(change.compute()) / (size * size)
        iterations += 1
    return grid, iterations


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=600, help="interior points per side")
    parser.add_argument("--epsilon", type=float, default=0.01)
    parser.add_argument("--max-iterations", type=int, default=10_000)
    parser.add_argument("--chunk", type=int, default=1024, help="chunk side (cells)")
    parser.add_argument("--scheduler-address", default=None, help="a distributed scheduler to run on")
    args = parser.parse_args()
    client = None
    if args.scheduler_address:  # everything through the scheduler, as a remote client works
        from distributed import Client

        client = Client(args.scheduler_address, direct_to_workers=False)
    else:
        dask.config.set(scheduler="threads")

    start = time.perf_counter()
    grid, iterations = solve(args.size, args.epsilon, args.max_iterations, args.chunk)
    checksum = float(grid.sum().compute())
    elapsed = time.perf_counter() - start

    print(f"iterations: {iterations}")
    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")
    if client is not None:
        client.close()


if __name__ == "__main__":
    main()

"""Direct-summation N-body (examples/nbody.py) with the N-by-N pair arrays as Dask arrays in
row chunks; each step's accelerations computed on the threaded scheduler.

Every step computes all pairwise gravitational accelerations (softened) with
N-by-N arrays. The checksum combines the final positions and the total energy.

Usage: python nbody_dask.py [SIZE] [--steps N] [--seed S] [--chunk C]
"""

import argparse
import time

import dask
import dask.array as da
import numpy as np

GRAVITY = 1.0
SOFTENING = 0.1
TIME_STEP = 0.01


def accelerations(positions: np.ndarray, masses: np.ndarray, chunk: int) -> np.ndarray:
    """Gravitational acceleration of every body, shape (N, 3)."""
    x = da.from_array(positions[:, 0:1], chunks=(chunk, 1))
    y = da.from_array(positions[:, 1:2], chunks=(chunk, 1))
    z = da.from_array(positions[:, 2:3], chunks=(chunk, 1))
    dx = x.T - x
    dy = y.T - y
    dz = z.T - z
    inverse_cube = (dx**2 + dy**2 + dz**2 + SOFTENING**2) ** -1.5
    ax = GRAVITY * (dx * inverse_cube) @ masses
    ay = GRAVITY * (dy * inverse_cube) @ masses
    az = GRAVITY * (dz * inverse_cube) @ masses
    return np.stack(dask.compute(ax, ay, az), axis=1)


def energy(positions: np.ndarray, velocities: np.ndarray, masses: np.ndarray, chunk: int) -> float:
    """Kinetic plus (softened) potential energy of the system."""
    kinetic = 0.5 * np.sum(masses[:, np.newaxis] * velocities**2)
    x = da.from_array(positions[:, 0:1], chunks=(chunk, 1))
    y = da.from_array(positions[:, 1:2], chunks=(chunk, 1))
    z = da.from_array(positions[:, 2:3], chunks=(chunk, 1))
    distance = da.sqrt((x.T - x) ** 2 + (y.T - y) ** 2 + (z.T - z) ** 2 + SOFTENING**2)
    mass = da.from_array(masses, chunks=chunk)
    pair_potential = -GRAVITY * da.outer(mass, mass) / distance
    potential = float(da.sum(da.triu(pair_potential, k=1)).compute())
    return float(kinetic + potential)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=2000, help="number of bodies")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--chunk", type=int, default=500, help="bodies per chunk")
    args = parser.parse_args()
    dask.config.set(scheduler="threads")

    rng = np.random.default_rng(args.seed)
    masses = rng.uniform(0.5, 1.5, args.size) / args.size
    positions = rng.standard_normal((args.size, 3))
    velocities = 0.1 * rng.standard_normal((args.size, 3))
    velocities -= np.mean(masses[:, np.newaxis] * velocities, axis=0) / np.mean(masses)

    start = time.perf_counter()
    acceleration = accelerations(positions, masses, args.chunk)
    for _ in range(args.steps):
        velocities += 0.5 * TIME_STEP * acceleration
        positions += TIME_STEP * velocities
        acceleration = accelerations(positions, masses, args.chunk)
        velocities += 0.5 * TIME_STEP * acceleration
    checksum = float(np.sum(np.abs(positions))) + energy(positions, velocities, masses, args.chunk)
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

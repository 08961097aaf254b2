"""Direct-summation N-body simulation with a leapfrog (kick-drift-kick) integrator.

Every step computes all pairwise gravitational accelerations (softened) with
N-by-N arrays. The checksum combines the final positions and the total energy.

Usage: python nbody.py [SIZE] [--steps N] [--seed S]
"""

import argparse
import time

import numpy as np

GRAVITY = 1.0
SOFTENING = 0.1
TIME_STEP = 0.01


def accelerations(positions: np.ndarray, masses: np.ndarray) -> np.ndarray:
    """Gravitational acceleration of every body, shape (N, 3)."""
    x = positions[:, 0:1]
    y = positions[:, 1:2]
    z = positions[:, 2:3]
    dx = x.T - x
    dy = y.T - y
    dz = z.T - z
    inverse_cube = (dx**2 + dy**2 + dz**2 + SOFTENING**2) ** -1.5
    ax = GRAVITY * (dx * inverse_cube) @ masses
    ay = GRAVITY * (dy * inverse_cube) @ masses
    az = GRAVITY * (dz * inverse_cube) @ masses
    return np.stack((ax, ay, az), axis=1)


def energy(positions: np.ndarray, velocities: np.ndarray, masses: np.ndarray) -> float:
    """Kinetic plus (softened) potential energy of the system."""
    kinetic = 0.5 * np.sum(masses[:, np.newaxis] * velocities**2)
    x = positions[:, 0:1]
    y = positions[:, 1:2]
    z = positions[:, 2:3]
    distance = np.sqrt((x.T - x) ** 2 + (y.T - y) ** 2 + (z.T - z) ** 2 + SOFTENING**2)
    pair_potential = -GRAVITY * np.outer(masses, masses) / distance
    potential = np.sum(np.triu(pair_potential, k=1))
    return float(kinetic + potential)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=2000, help="number of bodies")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()

    rng = np.random.default_rng(args.seed)
    masses = rng.uniform(0.5, 1.5, args.size) / args.size
    positions = rng.standard_normal((args.size, 3))
    velocities = 0.1 * rng.standard_normal((args.size, 3))
    velocities -= np.mean(masses[:, np.newaxis] * velocities, axis=0) / np.mean(masses)

    start = time.perf_counter()
    acceleration = accelerations(positions, masses)
    for _ in range(args.steps):
        velocities += 0.5 * TIME_STEP * acceleration
        positions += TIME_STEP * velocities
        acceleration = accelerations(positions, masses)
        velocities += 0.5 * TIME_STEP * acceleration
    checksum = float(np.sum(np.abs(positions))) + energy(positions, velocities, masses)
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

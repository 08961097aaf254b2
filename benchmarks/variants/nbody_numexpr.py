"""Direct-summation N-body (examples/nbody.py) with the pair kernels evaluated by numexpr.

Every step computes all pairwise gravitational accelerations (softened) with
N-by-N arrays. The checksum combines the final positions and the total energy.

Usage: python nbody_numexpr.py [SIZE] [--steps N] [--seed S]
"""

import argparse
import time

import numexpr as ne
import numpy as np

GRAVITY = 1.0
SOFTENING = 0.1
TIME_STEP = 0.01


def accelerations(positions: np.ndarray, masses: np.ndarray) -> np.ndarray:
    """Gravitational acceleration of every body, shape (N, 3)."""
    x = positions[:, 0:1]
    y = positions[:, 1:2]
    z = positions[:, 2:3]
    pairs = {"dx": x.T - x, "dy": y.T - y, "dz": z.T - z, "softening": SOFTENING, "gravity": GRAVITY}
    pairs["inverse_cube"] = ne.evaluate("(dx**2 + dy**2 + dz**2 + softening**2) ** -1.5", local_dict=pairs)
    ax = ne.evaluate("gravity * (dx * inverse_cube)", local_dict=pairs) @ masses
    ay = ne.evaluate("gravity * (dy * inverse_cube)", local_dict=pairs) @ masses
    az = ne.evaluate("gravity * (dz * inverse_cube)", local_dict=pairs) @ masses
    return np.stack((ax, ay, az), axis=1)


def energy(positions: np.ndarray, velocities: np.ndarray, masses: np.ndarray) -> float:
    """Kinetic plus (softened) potential energy of the system."""
    kinetic = 0.5 * np.sum(masses[:, np.newaxis] * velocities**2)
    x = positions[:, 0:1]
    y = positions[:, 1:2]
    z = positions[:, 2:3]
    terms = {"dx": x.T - x, "dy": y.T - y, "dz": z.T - z, "softening": SOFTENING}
    distance = ne.evaluate("sqrt(dx**2 + dy**2 + dz**2 + softening**2)", local_dict=terms)
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

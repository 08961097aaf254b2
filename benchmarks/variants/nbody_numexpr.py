"""Direct-summation N-body (examples/nbody.py) with the pair kernels evaluated by numexpr.

Every step computes all pairwise gravitational accelerations (softened) with
N-by-N arrays. The checksum combines the final positions and the total energy.

Usage: python nbody_numexpr.py [SIZE] [--steps N] [--seed S]
"""

import numexpr as ne
import numpy as np
from _example import load_example

example = load_example("nbody")
GRAVITY = example.GRAVITY
SOFTENING = example.SOFTENING


def accelerations(positions: np.ndarray, masses: np.ndarray) -> np.ndarray:
    """Gravitational acceleration of every body, shape (N, 3)."""
    x = positions[:, 0:1]
    y = positions[:, 1:2]
    z = positions[:, 2:3]
    pairs = {
        "dx": x.T - x,
        "dy": y.T - y,
        "dz": z.T - z,
        "softening": SOFTENING,
        "gravity": GRAVITY,
    }
    pairs["inverse_cube"] = ne.evaluate(
        "(dx**2 + dy**2 + dz**2 + softening**2) ** -1.5", local_dict=pairs
    )
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


if __name__ == "__main__":
    example.accelerations = accelerations
    example.energy = energy
    example.main()

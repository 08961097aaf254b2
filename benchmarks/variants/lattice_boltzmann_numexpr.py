"""Lattice Boltzmann (examples/lattice_boltzmann.py) with equilibrium and collision in numexpr.

The fluid starts moving right with a small sinusoidal perturbation; cells inside
the cylinder bounce populations back. The checksum combines the total mass and
the kinetic energy of the final flow.

Usage: python lattice_boltzmann_numexpr.py [SIZE] [--steps N] [--tau T]
"""

import numexpr as ne
import numpy as np
from _example import load_example

example = load_example("lattice_boltzmann")
INITIAL_VELOCITY = example.INITIAL_VELOCITY
OPPOSITE = example.OPPOSITE
VELOCITY_X = example.VELOCITY_X
VELOCITY_Y = example.VELOCITY_Y
WEIGHTS = example.WEIGHTS
macroscopic = example.macroscopic


def equilibrium(density: np.ndarray, ux: np.ndarray, uy: np.ndarray) -> np.ndarray:
    """Equilibrium populations, shape (9, ny, nx)."""
    projected = (
        VELOCITY_X[:, np.newaxis, np.newaxis] * ux + VELOCITY_Y[:, np.newaxis, np.newaxis] * uy
    )
    terms = {
        "weights": WEIGHTS[:, np.newaxis, np.newaxis],
        "density": density,
        "projected": projected,
        "speed_squared": ne.evaluate("ux**2 + uy**2", local_dict={"ux": ux, "uy": uy}),
    }
    return ne.evaluate(
        "weights * density * (1.0 + 3.0 * projected + 4.5 * projected**2 - 1.5 * speed_squared)",
        local_dict=terms,
    )


def simulate(nx: int, ny: int, steps: int, tau: float) -> np.ndarray:
    """Run ``steps`` stream-and-collide steps and return the final populations."""
    x, y = np.meshgrid(np.arange(nx), np.arange(ny))
    obstacle = (x - nx / 4) ** 2 + (y - ny / 2) ** 2 < (ny / 8) ** 2

    ux = INITIAL_VELOCITY * (1.0 + 0.05 * np.sin(2.0 * np.pi * y / ny))
    uy = np.zeros((ny, nx))
    populations = equilibrium(np.ones((ny, nx)), ux, uy)

    for _ in range(steps):
        for i in range(9):
            populations[i] = np.roll(populations[i], (VELOCITY_Y[i], VELOCITY_X[i]), axis=(0, 1))
        density, ux, uy = macroscopic(populations)
        terms = {
            "populations": populations,
            "balanced": equilibrium(density, ux, uy),
            "reflected": populations[OPPOSITE],
            "obstacle": obstacle,
            "tau": tau,
        }
        populations = ne.evaluate(
            "where(obstacle, reflected, populations - (populations - balanced) / tau)",
            local_dict=terms,
        )
    return populations


if __name__ == "__main__":
    example.equilibrium = equilibrium
    example.simulate = simulate
    example.main()

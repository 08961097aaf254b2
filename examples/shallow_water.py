"""Shallow water equations in a closed square basin, two-step Lax-Wendroff scheme.

A Gaussian drop is released into still water; walls reflect the waves. The
checksum combines the final water height and momentum.

Usage: python shallow_water.py [SIZE] [--steps N]
"""

import argparse
import time

import numpy as np

GRAVITY = 9.8
TIME_STEP = 0.02
SPACING = 1.0


def reflect(height: np.ndarray, momentum_x: np.ndarray, momentum_y: np.ndarray) -> None:
    """Fill the ghost cells: walls reflect the normal momentum and mirror everything else."""
    for field, flip_rows, flip_columns in (
        (height, 1.0, 1.0),
        (momentum_x, -1.0, 1.0),
        (momentum_y, 1.0, -1.0),
    ):
        field[0, :] = flip_rows * field[1, :]
        field[-1, :] = flip_rows * field[-2, :]
        field[:, 0] = flip_columns * field[:, 1]
        field[:, -1] = flip_columns * field[:, -2]


def fluxes(
    height: np.ndarray, along: np.ndarray, across: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fluxes of height, momentum along the direction and momentum across it."""
    return (
        along,
        along**2 / height + 0.5 * GRAVITY * height**2,
        along * across / height,
    )


def step(height: np.ndarray, momentum_x: np.ndarray, momentum_y: np.ndarray) -> None:
    """Advance the interior one time step in place."""
    ratio = TIME_STEP / SPACING

    # Half step to the cell faces between rows (x direction is axis 0).
    lower = (height[:-1, 1:-1], momentum_x[:-1, 1:-1], momentum_y[:-1, 1:-1])
    upper = (height[1:, 1:-1], momentum_x[1:, 1:-1], momentum_y[1:, 1:-1])
    flux_lower = fluxes(lower[0], lower[1], lower[2])
    flux_upper = fluxes(upper[0], upper[1], upper[2])
    face_x = [
        0.5 * (a + b) - 0.5 * ratio * (fb - fa)
        for a, b, fa, fb in zip(lower, upper, flux_lower, flux_upper)
    ]

    # Half step to the cell faces between columns (y direction is axis 1).
    left = (height[1:-1, :-1], momentum_y[1:-1, :-1], momentum_x[1:-1, :-1])
    right = (height[1:-1, 1:], momentum_y[1:-1, 1:], momentum_x[1:-1, 1:])
    flux_left = fluxes(left[0], left[1], left[2])
    flux_right = fluxes(right[0], right[1], right[2])
    face_y = [
        0.5 * (a + b) - 0.5 * ratio * (fb - fa)
        for a, b, fa, fb in zip(left, right, flux_left, flux_right)
    ]

    # Full step from the face values.
    height_x, along_x, across_x = face_x
    height_y, along_y, across_y = face_y
    flux_x = fluxes(height_x, along_x, across_x)
    flux_y = fluxes(height_y, along_y, across_y)
    height[1:-1, 1:-1] -= ratio * (flux_x[0][1:, :] - flux_x[0][:-1, :]) + ratio * (
        flux_y[0][:, 1:] - flux_y[0][:, :-1]
    )
    momentum_x[1:-1, 1:-1] -= ratio * (flux_x[1][1:, :] - flux_x[1][:-1, :]) + ratio * (
        flux_y[2][:, 1:] - flux_y[2][:, :-1]
    )
    momentum_y[1:-1, 1:-1] -= ratio * (flux_x[2][1:, :] - flux_x[2][:-1, :]) + ratio * (
        flux_y[1][:, 1:] - flux_y[1][:, :-1]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("size", type=int, nargs="?", default=500, help="cells per side")
    parser.add_argument("--steps", type=int, default=100)
    args = parser.parse_args()

    n = args.size
    coordinates = np.linspace(-1.0, 1.0, n + 2)
    x, y = np.meshgrid(coordinates, coordinates, indexing="ij")
    height = 1.0 + 0.5 * np.exp(-((x - 0.2) ** 2 + (y + 0.1) ** 2) / 0.02)
    momentum_x = np.zeros((n + 2, n + 2))
    momentum_y = np.zeros((n + 2, n + 2))

    start = time.perf_counter()
    for _ in range(args.steps):
        reflect(height, momentum_x, momentum_y)
        step(height, momentum_x, momentum_y)
    interior = (slice(1, -1), slice(1, -1))
    checksum = float(np.sum(height[interior])) + float(
        np.sum(np.abs(momentum_x[interior]) + np.abs(momentum_y[interior]))
    )
    elapsed = time.perf_counter() - start

    print(f"checksum: {checksum!r}")
    print(f"time: {elapsed:.6f}")


if __name__ == "__main__":
    main()

"""Shallow water (examples/shallow_water.py) with fluxes and updates evaluated by numexpr.

A Gaussian drop is released into still water; walls reflect the waves. The
checksum combines the final water height and momentum.

Usage: python shallow_water_numexpr.py [SIZE] [--steps N]
"""

import numexpr as ne
import numpy as np
from _example import load_example

example = load_example("shallow_water")
GRAVITY = example.GRAVITY
SPACING = example.SPACING
TIME_STEP = example.TIME_STEP

FLUX_ALONG = "along**2 / height + 0.5 * gravity * height**2"
FLUX_ACROSS = "along * across / height"


def fluxes(
    height: np.ndarray, along: np.ndarray, across: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Fluxes of height, momentum along the direction and momentum across it."""
    terms = {"height": height, "along": along, "across": across, "gravity": GRAVITY}
    return (
        along,
        ne.evaluate(FLUX_ALONG, local_dict=terms),
        ne.evaluate(FLUX_ACROSS, local_dict=terms),
    )


def half_step(a: np.ndarray, b: np.ndarray, fa: np.ndarray, fb: np.ndarray) -> np.ndarray:
    """Lax-Friedrichs half step to the faces between ``a`` and ``b``."""
    terms = {"a": a, "b": b, "fa": fa, "fb": fb, "ratio": TIME_STEP / SPACING}
    return ne.evaluate("0.5 * (a + b) - 0.5 * ratio * (fb - fa)", local_dict=terms)


def update(field: np.ndarray, flux_x: np.ndarray, flux_y: np.ndarray) -> None:
    """Subtract the flux divergence from the interior of ``field`` in place."""
    terms = {
        "interior": field[1:-1, 1:-1],
        "x_high": flux_x[1:, :],
        "x_low": flux_x[:-1, :],
        "y_high": flux_y[:, 1:],
        "y_low": flux_y[:, :-1],
        "ratio": TIME_STEP / SPACING,
    }
    field[1:-1, 1:-1] = ne.evaluate(
        "interior - (ratio * (x_high - x_low) + ratio * (y_high - y_low))", local_dict=terms
    )


def step(height: np.ndarray, momentum_x: np.ndarray, momentum_y: np.ndarray) -> None:
    """Advance the interior one time step in place."""
    lower = (height[:-1, 1:-1], momentum_x[:-1, 1:-1], momentum_y[:-1, 1:-1])
    upper = (height[1:, 1:-1], momentum_x[1:, 1:-1], momentum_y[1:, 1:-1])
    flux_lower = fluxes(*lower)
    flux_upper = fluxes(*upper)
    face_x = [half_step(*terms) for terms in zip(lower, upper, flux_lower, flux_upper)]

    left = (height[1:-1, :-1], momentum_y[1:-1, :-1], momentum_x[1:-1, :-1])
    right = (height[1:-1, 1:], momentum_y[1:-1, 1:], momentum_x[1:-1, 1:])
    flux_left = fluxes(*left)
    flux_right = fluxes(*right)
    face_y = [half_step(*terms) for terms in zip(left, right, flux_left, flux_right)]

    flux_x = fluxes(*face_x)
    flux_y = fluxes(*face_y)
    update(height, flux_x[0], flux_y[0])
    update(momentum_x, flux_x[1], flux_y[2])
    update(momentum_y, flux_x[2], flux_y[1])


if __name__ == "__main__":
    example.fluxes = fluxes
    example.half_step = half_step
    example.update = update
    example.step = step
    example.main()

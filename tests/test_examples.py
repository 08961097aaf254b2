"""Every example gives the same checksum under ``python -m shoal`` as under ``python``.

The eager threshold is 0 so that even these small sizes take Shoal's lazy path, and every
batch is verified and round-tripped through the wire format.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import checksum_runs
import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


@dataclass(frozen=True)
class Example:
    """An example program and the small size it is tested at."""

    script: str
    arguments: tuple[str, ...]

    @property
    def path(self) -> Path:
        return EXAMPLES / self.script


QUICK = [
    Example("jacobi_stencil.py", ("200", "--iterations", "20")),
    Example("heat_equation.py", ("60", "--epsilon", "0.1")),
    Example("black_scholes.py", ("20000", "--days", "3")),
    Example("mandelbrot.py", ("150", "--iterations", "30")),
]
FULL = [
    Example("nbody.py", ("150", "--steps", "5")),
    Example("knn.py", ("800", "--queries", "60")),
    Example("lattice_boltzmann.py", ("60", "--steps", "20")),
    Example("shallow_water.py", ("80", "--steps", "20")),
    Example("heat_live_view.py", ("60", "--sweeps", "5", "--view", "preview")),
]


def assert_same_checksum(example: Example) -> None:
    checksum_runs.assert_same_checksum(example.path, example.arguments)


@pytest.mark.parametrize("example", QUICK, ids=lambda example: example.script)
def test_example_checksum_matches_numpy(example: Example) -> None:
    assert_same_checksum(example)


@pytest.mark.full
@pytest.mark.parametrize("example", FULL, ids=lambda example: example.script)
def test_larger_example_checksum_matches_numpy(example: Example) -> None:
    assert_same_checksum(example)

"""Every example gives the same checksum under ``python -m shoal`` as under ``python``.

The eager threshold is 0 so that even these small sizes take Shoal's lazy path, and every
batch is verified and round-tripped through the wire format.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
RELATIVE_TOLERANCE = 1e-9


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


def shoal_environment() -> dict[str, str]:
    return {**os.environ, "SHOAL_EAGER_THRESHOLD": "0", "SHOAL_VERIFY": "1"}


def checksum(example: Example, *, shoal: bool) -> float:
    """Run the example and return the checksum it prints."""
    # Under Shoal a RuntimeWarning is shown, not raised (an ``error`` filter for it would run the
    # operations that may warn at the call, off the lazy path), and must not appear.
    prefix = [sys.executable, "-W", "error"] + (["-W", "always::RuntimeWarning", "-m", "shoal"] if shoal else [])
    result = subprocess.run(
        [*prefix, str(example.path), *example.arguments],
        env=shoal_environment() if shoal else None,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert result.returncode == 0, result.stderr
    assert "RuntimeWarning" not in result.stderr, result.stderr
    values = [
        line.split(":", 1)[1] for line in result.stdout.splitlines() if line.startswith("checksum:")
    ]
    assert len(values) == 1, result.stdout
    return float(values[0])


def test_every_example_is_tested() -> None:
    assert sorted(example.script for example in QUICK + FULL) == sorted(
        path.name for path in EXAMPLES.glob("*.py")
    )


def assert_same_checksum(example: Example) -> None:
    expected = checksum(example, shoal=False)
    assert checksum(example, shoal=True) == pytest.approx(expected, rel=RELATIVE_TOLERANCE, abs=0)


@pytest.mark.parametrize("example", QUICK, ids=lambda example: example.script)
def test_example_checksum_matches_numpy(example: Example) -> None:
    assert_same_checksum(example)


@pytest.mark.full
@pytest.mark.parametrize("example", FULL, ids=lambda example: example.script)
def test_larger_example_checksum_matches_numpy(example: Example) -> None:
    assert_same_checksum(example)

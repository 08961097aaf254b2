"""Every example prints NumPy's checksum at 2 and 3 ranks."""

from __future__ import annotations

import functools

import pytest

from cluster.harness import EXAMPLES, lines, run, run_numpy

pytestmark = pytest.mark.full

CASES = [
    ("jacobi_stencil.py", ("200", "--iterations", "20")),
    ("heat_equation.py", ("60", "--epsilon", "0.1")),
    ("black_scholes.py", ("20000", "--days", "3")),
    ("mandelbrot.py", ("150", "--iterations", "30")),
    ("nbody.py", ("150", "--steps", "5")),
    ("knn.py", ("800", "--queries", "60")),
    ("lattice_boltzmann.py", ("60", "--steps", "20")),
    ("shallow_water.py", ("80", "--steps", "20")),
    ("heat_live_view.py", ("60", "--sweeps", "5", "--view", "preview")),
]


def test_every_example_is_tested() -> None:
    assert sorted(script for script, _ in CASES) == sorted(path.name for path in EXAMPLES.glob("*.py"))


@functools.cache
def numpy_checksum(script: str, arguments: tuple[str, ...]) -> float:
    result = run_numpy(EXAMPLES / script, *arguments)
    assert result.returncode == 0, result.stderr
    (value,) = lines(result.stdout, "checksum:")
    return float(value)


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize(("script", "arguments"), CASES, ids=[script for script, _ in CASES])
def test_example_checksum_on_the_cluster(script: str, arguments: tuple[str, ...], ranks: int) -> None:
    result = run(ranks, EXAMPLES / script, *arguments)
    assert result.returncode == 0, result.stderr
    (value,) = lines(result.stdout, "checksum:")
    assert float(value) == pytest.approx(numpy_checksum(script, arguments), rel=1e-9, abs=0)

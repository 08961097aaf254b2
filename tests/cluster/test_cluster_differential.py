"""The cluster gives NumPy's results at 1, 2 and 3 ranks (3 splits every array unevenly), in both
flush modes, and the two modes agree bit for bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cluster.harness import (
    PROGRAMS,
    assert_same_arrays,
    environment,
    lines,
    load_arrays,
    numpy_arrays,
    run,
)

pytestmark = pytest.mark.full

PROGRAM = PROGRAMS / "differential.py"
# Element-wise results must be NumPy's to the bit; reductions and products may sum in another order.
REORDERED = frozenset({"sum", "sum0", "sum1", "mean", "matmul", "dot", "self_sum", "cumsum"})


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    return numpy_arrays(PROGRAM, tmp_path_factory.mktemp("numpy"))


def cluster_results(ranks: int, path: Path, **env: str) -> dict[str, np.ndarray]:
    result = run(ranks, PROGRAM, str(path), env=environment(**env))
    assert result.returncode == 0, result.stderr
    assert lines(result.stdout, "cases:"), result.stdout
    return load_arrays(path)


def assert_same(got: dict[str, np.ndarray], expected: dict[str, np.ndarray]) -> None:
    assert_same_arrays(got, expected, REORDERED)


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_cluster_gives_numpys_results(ranks: int, expected: dict[str, np.ndarray], tmp_path: Path) -> None:
    assert_same(cluster_results(ranks, tmp_path / "got.npz"), expected)


@pytest.mark.parametrize(
    ("ranks", "setting", "modes"),
    [(3, "SHOAL_LATENCY_HIDING", ("on", "off")), (2, "SHOAL_CLUSTER_WAIT", ("yield", "spin"))],
    ids=["blocking and latency hiding", "waiting in MPI or yielding"],
)
def test_modes_agree_bit_for_bit(ranks: int, setting: str, modes: tuple[str, str], expected: dict[str, np.ndarray], tmp_path: Path) -> None:
    first, second = (cluster_results(ranks, tmp_path / f"{mode}.npz", **{setting: mode}) for mode in modes)
    assert sorted(first) == sorted(second)
    for name in first:
        assert first[name].tobytes() == second[name].tobytes(), name
    assert_same(second, expected)


def test_every_base_distributed_still_gives_numpys_results(expected: dict[str, np.ndarray], tmp_path: Path) -> None:
    """Even one-element bases split over the ranks (where they have elements enough)."""
    assert_same(cluster_results(2, tmp_path / "got.npz", SHOAL_CLUSTER_MIN_BYTES="0", SHOAL_CLUSTER_MAX_PIECES="8"), expected)

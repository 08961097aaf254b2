"""Arrays leading with a few components keep each point's components on one rank: indexing the
components runs where the result lives (no gathering at rank 0), with NumPy's results at 1, 2
and 3 ranks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cluster.harness import PROGRAMS, assert_same_arrays, lines, load_arrays, numpy_arrays, run

pytestmark = pytest.mark.full

PROGRAM = PROGRAMS / "components.py"
REORDERED = frozenset({"sum0", "weighted", "steps"})


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    return numpy_arrays(PROGRAM, tmp_path_factory.mktemp("numpy"))


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_components_give_numpys_results_without_gathering(ranks: int, expected: dict[str, np.ndarray], tmp_path: Path) -> None:
    path = tmp_path / "got.npz"
    result = run(ranks, PROGRAM, str(path))
    assert result.returncode == 0, result.stderr
    assert lines(result.stdout, "cases:") == [str(len(expected))]
    assert "the cluster runs" not in result.stderr
    assert_same_arrays(load_arrays(path), expected, REORDERED)

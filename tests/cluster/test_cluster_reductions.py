"""Reductions combine partials across ranks in a tree: NumPy's results at 1, 2 and 3 ranks, exact
for integers and booleans, and the same bits from run to run for floating point."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cluster.harness import PROGRAMS, environment, lines, load_arrays, numpy_arrays, run

pytestmark = pytest.mark.full

PROGRAM = PROGRAMS / "reductions.py"


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    return numpy_arrays(PROGRAM, tmp_path_factory.mktemp("numpy"))


def cluster(ranks: int, path: Path, **env: str) -> dict[str, np.ndarray]:
    result = run(ranks, PROGRAM, str(path), env=environment(**env))
    assert result.returncode == 0, result.stderr
    assert lines(result.stdout, "cases:"), result.stdout
    assert "the cluster runs" not in result.stderr  # every reduction here is distributed
    return load_arrays(path)


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_reductions_give_numpys_results(ranks: int, expected: dict[str, np.ndarray], tmp_path: Path) -> None:
    got = cluster(ranks, tmp_path / "got.npz")
    assert sorted(got) == sorted(expected)
    for name, want in expected.items():
        have = got[name]
        assert have.dtype == want.dtype and have.shape == want.shape, name
        if want.dtype.kind in "fc" and "min" not in name and "max" not in name:
            np.testing.assert_allclose(have, want, rtol=1e-12 if want.dtype == np.float64 else 1e-5, atol=0, err_msg=name)
        else:  # exact dtypes, and selections, are NumPy's to the bit
            np.testing.assert_array_equal(have, want, err_msg=name)


def test_floating_results_are_the_same_bits_in_every_run_and_mode(tmp_path: Path) -> None:
    first = cluster(3, tmp_path / "first.npz", SHOAL_LATENCY_HIDING="on")
    second = cluster(3, tmp_path / "second.npz", SHOAL_LATENCY_HIDING="off")
    for name in first:
        assert first[name].tobytes() == second[name].tobytes(), name

"""``matmul``/``dot`` of distributed matrices (one-dimensional SUMMA, ``shoal.cluster.matmul``):
NumPy's results at 1, 2 and 3 ranks, uneven splits and non-square shapes, integers and booleans
exact, floating point the same bits in both flush modes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cluster.harness import PROGRAMS, environment, lines, load_arrays, numpy_arrays, run

pytestmark = pytest.mark.full

PROGRAM = PROGRAMS / "matmuls.py"


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    return numpy_arrays(PROGRAM, tmp_path_factory.mktemp("numpy"))


def cluster(ranks: int, path: Path, **env: str) -> tuple[dict[str, np.ndarray], str]:
    result = run(ranks, PROGRAM, str(path), env=environment(**env))
    assert result.returncode == 0, result.stderr
    assert lines(result.stdout, "cases:"), result.stdout
    return load_arrays(path), result.stderr


@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_products_give_numpys_results(ranks: int, expected: dict[str, np.ndarray], tmp_path: Path) -> None:
    got, stderr = cluster(ranks, tmp_path / "got.npz")
    assert "'matmul'" not in stderr and "'dot'" not in stderr  # distributed, not gathered
    assert sorted(got) == sorted(expected)
    for name, want in expected.items():
        have = got[name]
        assert have.dtype == want.dtype and have.shape == want.shape, name
        if want.dtype.kind == "f":
            np.testing.assert_allclose(have, want, rtol=1e-10, atol=1e-12, err_msg=name)
        else:
            np.testing.assert_array_equal(have, want, err_msg=name)


def test_products_are_the_same_bits_in_both_flush_modes(tmp_path: Path) -> None:
    hiding, _ = cluster(3, tmp_path / "hiding.npz", SHOAL_LATENCY_HIDING="on")
    blocking, _ = cluster(3, tmp_path / "blocking.npz", SHOAL_LATENCY_HIDING="off")
    for name in hiding:
        assert hiding[name].tobytes() == blocking[name].tobytes(), name

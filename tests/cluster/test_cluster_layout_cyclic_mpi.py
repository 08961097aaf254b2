"""The block-cyclic layout under ``mpiexec`` at 1, 2 and 3 ranks: NumPy's results for the
differential, reduction, matrix-product and stencil programs, the same bits as the row layout
wherever NumPy's order is kept, both flush modes bit for bit, and paper 003's Figure 6."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from cluster.harness import EXAMPLES, PROGRAMS, environment, lines, load_arrays, numpy_arrays, run
from cluster.test_cluster_differential import REORDERED, assert_same

pytestmark = pytest.mark.full

DIFFERENTIAL = PROGRAMS / "differential.py"
# (ranks, SHOAL_CLUSTER_BLOCK): automatic blocks (whole rows, 4 per rank); blocks of 3 rows, far
# smaller than a rank's share; two-dimensional blocks over a 3 x 1 process grid. Three ranks in
# automatic blocks: test_blocking_and_latency_hiding_agree_bit_for_bit (both modes, against NumPy).
CASES = [(1, "auto"), (2, "auto"), (2, "3"), (3, "5x7")]


def cyclic_env(block: str = "auto", **extra: str) -> dict[str, str]:
    return environment(SHOAL_CLUSTER_LAYOUT="block-cyclic", SHOAL_CLUSTER_BLOCK=block, **extra)


def results(program: Path, ranks: int, path: Path, env: dict[str, str]) -> tuple[dict[str, np.ndarray], str]:
    result = run(ranks, program, str(path), env=env)
    assert result.returncode == 0, result.stderr
    assert lines(result.stdout, "cases:"), result.stdout
    return load_arrays(path), result.stderr


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    return numpy_arrays(DIFFERENTIAL, tmp_path_factory.mktemp("numpy"))


@pytest.mark.parametrize(("ranks", "block"), CASES)
def test_differential_program_gives_numpys_results(ranks: int, block: str, expected: dict[str, np.ndarray], tmp_path: Path) -> None:
    got, _ = results(DIFFERENTIAL, ranks, tmp_path / "got.npz", cyclic_env(block))
    assert_same(got, expected)


def test_same_bits_as_the_row_layout_where_numpys_order_is_kept(tmp_path: Path) -> None:
    rows, _ = results(DIFFERENTIAL, 3, tmp_path / "rows.npz", environment(SHOAL_CLUSTER_LAYOUT="rows"))
    blocks, _ = results(DIFFERENTIAL, 3, tmp_path / "blocks.npz", cyclic_env("2"))
    assert sorted(rows) == sorted(blocks)
    for name in rows:
        if name not in REORDERED:
            assert rows[name].tobytes() == blocks[name].tobytes(), name


@pytest.mark.parametrize("block", ["auto", "4x5"])
def test_blocking_and_latency_hiding_agree_bit_for_bit(block: str, expected: dict[str, np.ndarray], tmp_path: Path) -> None:
    hiding, _ = results(DIFFERENTIAL, 3, tmp_path / "hiding.npz", cyclic_env(block, SHOAL_LATENCY_HIDING="on"))
    blocking, _ = results(DIFFERENTIAL, 3, tmp_path / "blocking.npz", cyclic_env(block, SHOAL_LATENCY_HIDING="off"))
    assert sorted(hiding) == sorted(blocking)
    for name in hiding:
        assert hiding[name].tobytes() == blocking[name].tobytes(), name
    assert_same(blocking, expected)


@pytest.mark.parametrize(("mode", "block"), [("on", "auto"), ("off", "auto"), ("on", "1000"), ("off", "1000")])
def test_figure_6_exchange_does_not_deadlock(mode: str, block: str) -> None:
    """Blocks of 1000 elements deal the two halves of each array to both ranks in turn."""
    expected = subprocess.run([sys.executable, str(PROGRAMS / "figure6.py")], capture_output=True, text=True, timeout=60, check=True).stdout
    result = run(2, PROGRAMS / "figure6.py", env=cyclic_env(block, SHOAL_LATENCY_HIDING=mode, SHOAL_CLUSTER_MIN_BYTES="0"))
    assert result.returncode == 0, result.stderr
    assert result.stdout == expected


@pytest.mark.parametrize(("ranks", "block"), [(2, "auto"), (3, "auto"), (3, "5x7"), (2, "8x8")])
def test_reductions_give_numpys_results(ranks: int, block: str, tmp_path: Path) -> None:
    program = PROGRAMS / "reductions.py"
    want = numpy_arrays(program, tmp_path)
    got, stderr = results(program, ranks, tmp_path / "got.npz", cyclic_env(block))
    assert "the cluster runs" not in stderr
    for name, value in want.items():
        assert got[name].dtype == value.dtype and got[name].shape == value.shape, name
        if value.dtype.kind in "fc" and "min" not in name and "max" not in name:
            np.testing.assert_allclose(got[name], value, rtol=1e-12 if value.dtype == np.float64 else 1e-5, atol=0, err_msg=name)
        else:
            np.testing.assert_array_equal(got[name], value, err_msg=name)


@pytest.mark.parametrize(("ranks", "block"), [(2, "auto"), (3, "auto"), (3, "5x7"), (2, "2")])
def test_matrix_products_give_numpys_results_distributed(ranks: int, block: str, tmp_path: Path) -> None:
    program = PROGRAMS / "matmuls.py"
    want = numpy_arrays(program, tmp_path)
    got, stderr = results(program, ranks, tmp_path / "got.npz", cyclic_env(block))
    assert "'matmul'" not in stderr and "'dot'" not in stderr
    for name, value in want.items():
        if value.dtype.kind == "f":
            np.testing.assert_allclose(got[name], value, rtol=1e-10, atol=1e-12, err_msg=name)
        else:
            np.testing.assert_array_equal(got[name], value, err_msg=name)


@pytest.mark.parametrize(("ranks", "block", "mode"), [(2, "auto", "on"), (3, "auto", "off"), (3, "6x9", "on")])
def test_in_place_stencils_give_numpys_results(ranks: int, block: str, mode: str, tmp_path: Path) -> None:
    program = PROGRAMS / "halo_stencils.py"
    want = numpy_arrays(program, tmp_path)
    got, _ = results(program, ranks, tmp_path / "got.npz", cyclic_env(block, SHOAL_LATENCY_HIDING=mode))
    for name, value in want.items():
        if name.endswith("sum"):
            np.testing.assert_allclose(got[name], value, rtol=1e-12, atol=0, err_msg=name)
        else:
            np.testing.assert_array_equal(got[name], value, err_msg=name)


@pytest.mark.parametrize("script", ["jacobi_stencil.py", "lu_like.py"])
def test_triangular_and_stencil_examples_print_numpys_checksum(script: str) -> None:
    path = EXAMPLES / script if (EXAMPLES / script).exists() else PROGRAMS / script
    want = subprocess.run([sys.executable, str(path), "120"], capture_output=True, text=True, timeout=60, check=True).stdout
    result = run(3, path, "120", env=cyclic_env())
    assert result.returncode == 0, result.stderr
    (value,) = lines(result.stdout, "checksum:")
    (reference,) = lines(want, "checksum:")
    assert float(value) == pytest.approx(float(reference), rel=1e-9, abs=0)

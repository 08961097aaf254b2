"""Reads at rank 0 take the ranks that hold what is read, and only where it is read.

A value that lives whole on rank 0 (a reduction's result) is read there without the other
ranks: a loop that tests its convergence each iteration sent every rank a fetch command for it.
A mask of a million elements (one megabyte) was read as a product's matrix is, fetched whole
to rank 0 at each ``np.where`` (Black-Scholes 10^6 x 30 at 2 ranks: 1.86 s against 1.05 s).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cluster.harness import PROGRAMS, environment, load_arrays, numpy_arrays, run

pytestmark = pytest.mark.full

PROGRAM = PROGRAMS / "root_reads.py"
MASKS = PROGRAMS / "large_masks.py"
ROOT_READS, GRID_READS = 12, 3  # as the program makes them


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    return numpy_arrays(PROGRAM, tmp_path_factory.mktemp("numpy"))


def _reads(stderr: str) -> list[int]:
    """Each rank's count of reads it took part in, from ``SHOAL_STATS``' report."""
    return [int(line.split(" reads ")[1].split()[0]) for line in stderr.splitlines() if "drawn where they live" in line]


@pytest.mark.timeout(300)
@pytest.mark.parametrize("ranks", [2, 3])
def test_reads_of_values_on_rank_0_take_no_other_rank(ranks: int, expected: dict[str, np.ndarray], tmp_path: Path) -> None:
    path = tmp_path / "cluster.npz"
    result = run(ranks, PROGRAM, str(path), env=environment(SHOAL_STATS="1"))
    assert result.returncode == 0, result.stderr[-3000:]
    arrays = load_arrays(path)
    np.testing.assert_array_equal(arrays["grid"], expected["grid"], strict=True)
    np.testing.assert_array_equal(arrays["corners"], expected["corners"], strict=True)
    np.testing.assert_allclose(arrays["changes"], expected["changes"], rtol=1e-14)  # sums combined over ranks
    reads = _reads(result.stderr)
    assert len(reads) == ranks, result.stderr[-3000:]
    # Rank 0 reads the loop's test and each change, and the grid's elements; the others take
    # part only in reads of the grid (its first read fetches a copy that later reads use).
    assert reads[0] >= 2 * ROOT_READS, result.stderr[-3000:]
    assert all(1 <= count <= GRID_READS + 1 for count in reads[1:]), result.stderr[-3000:]


@pytest.mark.timeout(300)
def test_a_large_mask_of_few_bytes_is_not_fetched_whole(tmp_path: Path) -> None:
    expected = numpy_arrays(MASKS, tmp_path)
    path = tmp_path / "cluster.npz"
    result = run(2, MASKS, str(path), env=environment(SHOAL_STATS="1", SHOAL_SETTLED_THRESHOLD=str(1 << 19)))
    assert result.returncode == 0, result.stderr[-3000:]
    arrays = load_arrays(path)
    np.testing.assert_array_equal(arrays["y"], expected["y"], strict=True)
    np.testing.assert_allclose(arrays["means"], expected["means"], rtol=1e-14)  # sums combined over ranks
    reads = _reads(result.stderr)
    assert reads[1] <= 1, result.stderr[-3000:]  # the last y, written to the file

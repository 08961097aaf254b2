"""Random draws over ranks (``shoal/drawn.py``): other ranks draw their parts of a PCG64 draw
from its recipe instead of receiving them, and every array is NumPy's, bit for bit."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from cluster.harness import PROGRAMS, environment, load_arrays, numpy_arrays, run

pytestmark = pytest.mark.full

PROGRAM = PROGRAMS / "draws.py"


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, np.ndarray]:
    return numpy_arrays(PROGRAM, tmp_path_factory.mktemp("numpy"))


@pytest.mark.timeout(300)
@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize("settled", ["0", "64"], ids=["recorded", "settled"])
def test_parts_drawn_where_they_live_are_numpys(ranks: int, settled: str, expected: dict[str, np.ndarray], tmp_path: Path) -> None:
    path = tmp_path / "cluster.npz"
    # SHOAL_VERIFY=1 would send every batch through the wire format, whose data is a copy.
    result = run(ranks, PROGRAM, str(path), env=environment(SHOAL_STATS="1", SHOAL_SETTLED_THRESHOLD=settled, SHOAL_VERIFY="0"))
    assert result.returncode == 0, result.stderr[-3000:]
    arrays = load_arrays(path)
    assert sorted(arrays) == sorted(expected)
    for name, value in expected.items():
        np.testing.assert_array_equal(arrays[name], value, strict=True, err_msg=name)
    counts = [line.split("random parts drawn where they live ")[1].split()[:2] for line in result.stderr.splitlines() if "drawn where they live" in line]
    assert len(counts) == ranks, result.stderr[-3000:]
    drawn = [int(count) for count, _ in counts]
    ahead = [int(note.strip("(")) for _, note in counts]
    used = 6 if settled == "0" else 3  # with views settled, only the arrays computed on reach the ranks
    assert drawn[0] >= used * (ranks - 1) and all(count >= used for count in drawn[1:]), result.stderr[-3000:]
    # Drawn ahead while rank 0 ran the program, except "misaligned", laid out otherwise than announced.
    assert ahead[0] == 0 and all(0 < count < total for count, total in zip(ahead[1:], drawn[1:])), result.stderr[-3000:]

"""NumPy idioms at Shoal's default thresholds across 2 and 3 ranks, against NumPy in the same
program (``programs/idioms.py``), with batches handed over as recorded."""

from __future__ import annotations

import pytest

from cluster.harness import PROGRAMS, environment, run

pytestmark = pytest.mark.full


@pytest.mark.timeout(300)
@pytest.mark.parametrize("ranks", [2, 3])
def test_idioms_across_ranks_give_numpys_results(ranks: int) -> None:
    env = environment(SHOAL_VERIFY="0")
    for default in ("SHOAL_EAGER_THRESHOLD", "SHOAL_SETTLED_THRESHOLD", "SHOAL_CLUSTER_MIN_BYTES"):
        del env[default]  # as `mpiexec -n N python -m shoal app.py` runs
    result = run(ranks, PROGRAMS / "idioms.py", timeout=240, env=env)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-3000:]
    assert "differed: []" in result.stdout

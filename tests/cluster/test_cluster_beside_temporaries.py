"""Temporaries kept whole on a rank other than 0, beside the rows of their operand
(``shoal/cluster/row_alignment.py``): reductions, sorts, products and reads of them give NumPy's
results (rank 0 once planned them as its own data and failed with a ``KeyError``)."""

from __future__ import annotations

import pytest

from cluster.harness import PROGRAMS, run, run_numpy

pytestmark = pytest.mark.full

PROGRAM = PROGRAMS / "beside_temporaries.py"


@pytest.mark.timeout(240)
@pytest.mark.parametrize("ranks", [2, 3])
def test_temporaries_on_another_rank_give_numpys_results(ranks: int) -> None:
    expected = run_numpy(PROGRAM)
    assert expected.returncode == 0, expected.stderr
    result = run(ranks, PROGRAM, timeout=180)
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout == expected.stdout

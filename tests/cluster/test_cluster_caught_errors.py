"""A program that catches the errors of array work and goes on gives NumPy's output across ranks
(``caught_errors_program.py``). A rank whose computation failed had skipped its later
computations in the batch, those recorded before the failing call but waiting for a message
among them: a program that caught ``LinAlgError`` then read unfilled rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster.harness import environment, run, run_numpy

pytestmark = pytest.mark.full

PROGRAM = Path(__file__).resolve().parents[1] / "caught_errors_program.py"


@pytest.mark.parametrize("options", [{"SHOAL_CLUSTER_HALO": "0"}, {"SHOAL_CLUSTER_LAYOUT": "block-cyclic"}], ids=["rows-no-halo", "block-cyclic"])
def test_a_program_that_catches_errors_goes_on_across_ranks(options: dict[str, str]) -> None:
    expected = run_numpy(PROGRAM)
    assert expected.returncode == 0 and expected.stdout.count("caught ") == 10
    result = run(2, PROGRAM, env=environment(**options))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout == expected.stdout

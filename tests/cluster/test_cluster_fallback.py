"""An operation the cluster does not distribute warns once, at the program's line, not Shoal's."""

from __future__ import annotations

import pytest

from cluster.harness import PROGRAMS, lines, run

pytestmark = pytest.mark.full


@pytest.mark.parametrize("ranks", [2, 3])
def test_a_gathered_operation_warns_at_the_programs_line(ranks: int) -> None:
    program = PROGRAMS / "fallback.py"
    result = run(ranks, program)
    assert result.returncode == 0, result.stderr
    assert lines(result.stdout, "first:") == ["0.0"]
    warned = [line for line in result.stderr.splitlines() if "ShoalFallbackWarning" in line]
    assert warned == [f"{program}:7: ShoalFallbackWarning: the cluster runs 'sort' on data gathered at rank 0, not distributed"]

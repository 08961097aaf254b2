"""``python -m shoal.demo`` runs an example both ways and reports matching checksums."""

from __future__ import annotations

import pytest

from shoal.demo import main


def test_demo_reports_both_runs_side_by_side(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--repeat", "2", "jacobi_stencil", "120", "--iterations", "3"]) == 0
    lines = capsys.readouterr().out.splitlines()
    rows = {
        line.split("  ")[0].strip(): line.split() for line in lines if line.startswith("python")
    }
    assert set(rows) == {"python", "python -m shoal"}
    assert rows["python"][1] == rows["python -m shoal"][3]  # the same checksum, digit for digit
    assert any(line.startswith("speed-up of shoal over python (compute time):") for line in lines)
    assert "checksums agree: relative difference 0.0e+00" in lines


def test_demo_rejects_an_unknown_example(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["no_such_example"])
    assert exit_info.value.code == 2
    assert "no example 'no_such_example'" in capsys.readouterr().err


def test_demo_fails_when_the_example_fails(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["jacobi_stencil", "--no-such-flag"]) == 1
    assert "failed (2)" in capsys.readouterr().err

"""The size sweep: SIZE and step choice from the catalog, and a quick run that writes a table."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks.size_sweep import plan, size_for, steps_for, with_steps
from benchmarks.size_sweep_table import COLUMNS, HEADER, parse
from shoal.bench.catalog import EXAMPLES, find


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda example: example.name)
def test_sizes_bracket_each_power_of_ten(example) -> None:
    for exponent in range(4, 9):
        size = size_for(example, 10**exponent)
        elements = example.elements(size)
        assert example.elements(size - 1) < elements, "not the smallest SIZE with this many elements"
        assert 10**exponent / 3 < elements < 10**exponent * 3


def test_size_never_goes_below_what_the_example_accepts() -> None:
    knn = find("knn")
    assert size_for(knn, 1000) == 7
    points = plan(knn, range(3, 6))
    assert [point.size for point in points] == [7, 25]  # 10^3 and 10^4 both fall on SIZE 7


def test_steps_shrink_as_arrays_grow_and_replace_only_the_step_option() -> None:
    jacobi = find("jacobi_stencil")
    assert steps_for(jacobi, 1000) == 1000 and steps_for(jacobi, 10**6) == 30 and steps_for(jacobi, 10**8) == 1
    assert steps_for(find("black_scholes"), 1000) == 180  # options expire after 182 days
    heat = with_steps(find("heat_equation"), 7)
    assert heat.arguments == ("--epsilon", "0", "--max-iterations", "7")
    assert with_steps(find("knn"), 7).arguments == find("knn").arguments


def test_unknown_example_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    from benchmarks.size_sweep import main

    with pytest.raises(SystemExit):
        main(["--examples", "no_such_example"])
    assert "unknown example 'no_such_example'" in capsys.readouterr().err


def test_quick_run_writes_a_table_that_parses(tmp_path: Path) -> None:
    output = tmp_path / "sweep.md"
    run = subprocess.run(
        [sys.executable, "-m", "benchmarks.size_sweep", "--quick", "--examples", "jacobi_stencil",
         "--bottom-exponent", "3", "--top-exponent", "3", "--repeats", "1", "--confirm", "0",
         "--output", str(output)],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert run.returncode == 0, run.stderr
    text = output.read_text()
    assert HEADER in text
    (row,) = parse(text)
    assert row.example == "jacobi_stencil" and row.elements == 1024
    assert row.numpy_seconds > 0 and row.shoal_seconds > 0
    # seconds are printed to 4 decimals (0.6% of a 0.008 s run) and the ratio to 2: up to 1.5% apart
    assert row.time_ratio == pytest.approx(row.shoal_seconds / row.numpy_seconds, rel=0.02)
    assert row.numpy_mib > 10 and row.shoal_mib > 10
    assert "Offenders:" in text


def test_parse_rejects_a_damaged_row() -> None:
    good = "| jacobi_stencil | 1,024 | `32` | 0.1 [0.1, 0.1] | 0.1 [0.1, 0.1] | 1.00x | 30 [30, 30] | 30 [30, 30] | 1.00x | x | |"
    assert good.count("|") - 1 == COLUMNS
    assert len(parse(f"{HEADER}\n|---|\n{good}\n")) == 1
    with pytest.raises(ValueError, match="expected 11 cells"):
        parse(f"{HEADER}\n|---|\n| jacobi_stencil | 1,024 |\n")
    with pytest.raises(ValueError, match="MEDIAN"):
        parse(f"{HEADER}\n|---|\n{good.replace('0.1 [0.1, 0.1]', 'fast', 1)}\n")

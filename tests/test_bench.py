"""Smoke test of ``python -m shoal.bench``: a quick run writes the table, and checksums agree."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from shoal.bench.results import checksums_agree
from shoal.bench.stats import Totals, parse_stats


def test_checksum_tolerance_is_relative() -> None:
    assert checksums_agree(1e12, 1e12 * (1 + 5e-10))
    assert not checksums_agree(1.0, 1.0 + 1e-8)
    assert not checksums_agree(float("nan"), 1.0)


def test_engine_stats_line_round_trips() -> None:
    totals = Totals(batches=3, block_ops=1200, scheduling_seconds=0.0125)
    assert parse_stats(f"noise\n{totals.line()}\n") == totals
    assert parse_stats("no stats here") is None


def test_stats_lines_of_ranks_run_together_are_skipped() -> None:
    totals = Totals(batches=3, block_ops=5, scheduling_seconds=0.25)
    rank_one = f"{totals.line()} peak_bytes=10"
    run_together = "shoal-stats: batches=82 block_ops=4shoal cluster: rank  host  messages"  # another rank's line cut into it
    assert parse_stats(f"{rank_one}\n{run_together}\n") == totals
    assert parse_stats(run_together) is None


def test_unknown_example_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    from shoal.bench import main

    with pytest.raises(SystemExit):
        main(["--examples", "no_such_example"])
    assert "unknown example no_such_example" in capsys.readouterr().err


@pytest.mark.full
@pytest.mark.timeout(360)  # above its run's own 300 s
def test_quick_run_writes_table_and_checksums_agree(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "shoal.bench", "--quick", "--repeats", "1",
         "--examples", "jacobi_stencil,black_scholes", "--output", str(tmp_path)],
        capture_output=True, text=True, timeout=300, check=False,
    )
    table = (tmp_path / "bench.md").read_text()
    assert run.returncode == 0, run.stderr
    assert "| jacobi_stencil |" in table and "| black_scholes |" in table
    assert "All tools' checksums agree" in table
    assert "Fused element-wise kernel: the same triad through Shoal" in table
    assert (tmp_path / "bench.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.timeout(180)  # above its run's own 120 s
def test_shoal_stats_prints_engine_totals_at_exit(tmp_path: Path) -> None:
    program = tmp_path / "program.py"
    program.write_text("import numpy as np\na = np.arange(1_000_000.0)\nprint(float(np.sum(a * 2.0 + 1.0)))\n")
    env = {**os.environ, "SHOAL_STATS": "1", "SHOAL_ENGINE": "node"}
    run = subprocess.run([sys.executable, "-m", "shoal", str(program)], capture_output=True, text=True, env=env, timeout=120, check=True)
    totals = parse_stats(run.stderr)
    assert totals is not None and totals.batches >= 1
    assert float(run.stdout) == float((np.arange(1_000_000.0) * 2.0 + 1.0).sum())
    from shoal.bench.stats import STATS_PREFIX
    from shoal.engine.node.stats import STATS_PREFIX as ENGINE_PREFIX

    assert STATS_PREFIX == ENGINE_PREFIX


@pytest.mark.full
def test_fused_triad_is_measured_against_the_roof_loop() -> None:
    from shoal.bench import fused

    result = fused.measure_in_child(elements=1 << 18, repeats=2)
    assert result.elements == 1 << 18
    assert result.shoal_bytes_per_second > 0 and result.roof_bytes_per_second > 0
    assert result.fraction == result.shoal_bytes_per_second / result.roof_bytes_per_second
    with pytest.raises(ValueError, match="must be positive"):
        fused.measure(elements=0)

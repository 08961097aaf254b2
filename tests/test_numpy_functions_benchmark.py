"""The NumPy-functions benchmark: a small run writes a row per case, and both sides agree."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import shoal.numpy as snp
from benchmarks.numpy_functions import CASES, NEEDS_NANS


def test_each_case_gives_numpys_answer() -> None:
    rng = np.random.default_rng(3)
    a = rng.random((40, 40))
    n = np.where(rng.random((40, 40)) < 0.1, np.nan, a)
    for name, case in CASES.items():
        second = n if name in NEEDS_NANS else a + 1e-12
        want = case(np, a, second)
        have = case(snp, snp.asarray(a) + 0.0, snp.asarray(second) + 0.0)
        assert type(have) is type(want)
        assert np.isclose(have, want, rtol=1e-12, equal_nan=True), name


@pytest.mark.timeout(360)  # above its run's own 300 s
def test_a_small_run_writes_its_table(tmp_path) -> None:
    output = tmp_path / "functions.md"
    subprocess.run([sys.executable, "-m", "benchmarks.numpy_functions", "--size", "64", "--repeats", "1", "--output", str(output)], check=True, capture_output=True, timeout=300)
    rows = [line for line in output.read_text().splitlines() if line.startswith("| `")]
    assert len(rows) == len(CASES)

"""``python -m shoal --fallbacks`` lists no NumPy fallback for any example and any program of the
loop-pattern suite, run small with every array lazy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PROGRAMS = sorted([*ROOT.glob("examples/*.py"), *ROOT.glob("benchmarks/loops/*.py")])
EXTRA = {"heat_live_view.py": ["--view", "none"]}


@pytest.mark.full
@pytest.mark.parametrize("program", PROGRAMS, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_program_uses_no_fallback(program: Path, tmp_path: Path) -> None:
    environment = {**os.environ, "SHOAL_EAGER_THRESHOLD": "0", "SHOAL_VERIFY": "1"}
    arguments = [sys.executable, "-m", "shoal", "--fallbacks", str(program), "24", *EXTRA.get(program.name, [])]
    result = subprocess.run(arguments, cwd=tmp_path, env=environment, capture_output=True, text=True, timeout=100)
    assert result.returncode == 0, result.stderr
    assert "shoal: the program used no NumPy fallbacks" in result.stderr, result.stderr


def test_every_program_is_listed() -> None:
    names = {path.name for path in PROGRAMS}
    assert {"knn.py", "csr_spmv.py", "edit_distance.py", "floyd_warshall.py"} <= names

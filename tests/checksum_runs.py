"""Running a program script under Python and under ``python -m shoal`` for the checksum it prints."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

RELATIVE_TOLERANCE = 1e-9


def checksum(script: Path, arguments: tuple[str, ...], *, shoal: bool) -> float:
    """Run ``script`` (under Shoal with every array lazy and verified) and return its checksum."""
    # Under Shoal a RuntimeWarning is shown, not raised (an ``error`` filter for it would run the
    # operations that may warn at the call, off the lazy path), and must not appear.
    prefix = [sys.executable, "-W", "error"]
    if shoal:
        prefix += ["-W", "always::RuntimeWarning", "-m", "shoal"]
    environment = (
        {**os.environ, "SHOAL_EAGER_THRESHOLD": "0", "SHOAL_VERIFY": "1"} if shoal else None
    )
    result = subprocess.run(
        [*prefix, str(script), *arguments],
        env=environment,
        capture_output=True,
        text=True,
        timeout=100,
    )
    assert result.returncode == 0, result.stderr[-4000:]
    assert "RuntimeWarning" not in result.stderr, result.stderr[-4000:]
    values = [
        line.split(":", 1)[1] for line in result.stdout.splitlines() if line.startswith("checksum:")
    ]
    assert len(values) == 1, result.stdout
    return float(values[0])


def assert_same_checksum(script: Path, arguments: tuple[str, ...]) -> None:
    """The checksum under Shoal equals NumPy's to ``RELATIVE_TOLERANCE``."""
    expected = checksum(script, arguments, shoal=False)
    got = checksum(script, arguments, shoal=True)
    assert got == pytest.approx(expected, rel=RELATIVE_TOLERANCE, abs=0)

"""``ComplexWarning`` for casts that drop imaginary parts: once, at the user's line, as NumPy.

A lazy ``astype``, a whole and a sliced assignment of complex values into a real array: the
warnings a program shows under ``python -m shoal`` (category, message, file, line) are those it
shows under NumPy, and the engine that later runs the recorded casts shows none of its own.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

PROGRAM = textwrap.dedent(
    """
    import warnings
    import numpy as np
    warnings.simplefilter("always")
    z = np.zeros(1 << 20) + 1j
    f = z.astype(np.float64)
    r = np.empty(1 << 20)
    r[...] = np.zeros(1 << 20, complex)
    r[:10] = z[:10]
    r[10:20] = np.ones(10, complex)
    try:
        z.astype(np.float32, casting="same_kind")
    except TypeError as error:
        print("TypeError", error)
    print("sum", float(f.sum() + r.sum()))
    b = z.astype(bool)  # to bool: nonzero in either part, and no warning
    m = np.zeros(1 << 20, bool)
    m[...] = z * 1j
    print("bools", int(b.sum()), int(m.sum()), bool(np.array(1j, np.complex64).astype(bool)))
    """
)


def _run(program: Path, *prefix: str) -> tuple[list[str], str]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("SHOAL_")}
    result = subprocess.run([sys.executable, *prefix, str(program)], env=environment, capture_output=True, text=True, timeout=100)
    assert result.returncode == 0, result.stderr[-4000:]
    return [line for line in result.stderr.splitlines() if "Warning" in line], result.stdout


def test_complex_to_real_casts_warn_once_at_the_users_line(tmp_path: Path) -> None:
    program = tmp_path / "casts.py"
    program.write_text(PROGRAM)
    expected = _run(program)
    assert f"bools {1 << 20} {1 << 20} True" in expected[1]
    assert len(expected[0]) == 4 and all("ComplexWarning" in line for line in expected[0])
    assert _run(program, "-m", "shoal") == expected

"""Every loop-pattern kernel (benchmarks/loops) gives NumPy's checksum under ``python -m shoal``.

As in test_examples.py the eager threshold is 0, so these tiny sizes take Shoal's lazy path and
every batch is verified and round-tripped through the wire format. Kernels that use a function
``shoal.numpy`` does not implement yet (``add.reduceat``, ``minimum.accumulate``,
``fill_diagonal``) run it through the NumPy fallback, whose warning is allowed here; a
RuntimeWarning is an error under NumPy and must not appear under Shoal.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

LOOPS = Path(__file__).resolve().parent.parent / "benchmarks" / "loops"
RELATIVE_TOLERANCE = 1e-9


@dataclass(frozen=True)
class Kernel:
    """A loop-pattern kernel and the tiny size it is tested at."""

    name: str
    arguments: tuple[str, ...]

    @property
    def path(self) -> Path:
        return LOOPS / f"{self.name}.py"


QUICK = [
    Kernel("trisolv", ("40",)),
    Kernel("covariance", ("30",)),
    Kernel("fractal_masks", ("40", "--steps", "10")),
    Kernel("gauss_seidel", ("24", "--steps", "2")),
    Kernel("diagonal_trace", ("30", "--steps", "2")),
]
FULL: list = [
    Kernel("adi", ("24", "--steps", "2")),
    Kernel("bicg", ("40", "--steps", "3")),
    Kernel("cholesky", ("30", "--repeat", "2")),
    Kernel("cnn_forward", ("20", "--batch", "2")),
    Kernel("conv2d", ("30", "--steps", "2")),
    Kernel("correlation", ("30",)),
    Kernel("csr_spmv", ("500", "--steps", "3")),
    Kernel("edit_distance", ("30",)),
    Kernel("fdtd_2d", ("30", "--steps", "3")),
    Kernel("floyd_warshall", ("30",)),
    Kernel("gramschmidt", ("30",)),
    Kernel("heat_3d", ("12", "--steps", "2")),
    Kernel("iir_filter", ("30",)),
    Kernel("jacobi_1d", ("500", "--steps", "5")),
    Kernel("lu", ("30", "--repeat", "2")),
    Kernel("mlp", ("40", "--steps", "2")),
    Kernel("softmax_rows", ("30",)),
    Kernel("syrk", ("30",)),
    Kernel("trmm", ("30",)),
]


def checksum(kernel: Kernel, *, shoal: bool) -> float:
    """Run the kernel and return the checksum it prints."""
    if shoal:
        # shown, not raised: an ``error`` filter would run what may warn at the call, not lazily
        prefix = [sys.executable, "-W", "always::RuntimeWarning", "-m", "shoal"]
        env = {**os.environ, "SHOAL_EAGER_THRESHOLD": "0", "SHOAL_VERIFY": "1"}
    else:
        prefix, env = [sys.executable, "-W", "error"], None
    result = subprocess.run(
        [*prefix, str(kernel.path), *kernel.arguments],
        env=env,
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


def assert_same_checksum(kernel: Kernel) -> None:
    expected = checksum(kernel, shoal=False)
    assert checksum(kernel, shoal=True) == pytest.approx(expected, rel=RELATIVE_TOLERANCE, abs=0)


def test_every_kernel_is_tested() -> None:
    kernels = [getattr(entry, "values", (entry,))[0] for entry in QUICK + FULL]
    assert sorted(kernel.name for kernel in kernels) == sorted(
        path.stem for path in LOOPS.glob("*.py")
    )


@pytest.mark.parametrize("kernel", QUICK, ids=lambda kernel: kernel.name)
def test_kernel_checksum_matches_numpy(kernel: Kernel) -> None:
    assert_same_checksum(kernel)


@pytest.mark.full
@pytest.mark.parametrize("kernel", FULL, ids=lambda kernel: kernel.name)
def test_more_kernel_checksums_match_numpy(kernel: Kernel) -> None:
    assert_same_checksum(kernel)

"""Every loop-pattern kernel (benchmarks/loops) gives NumPy's checksum under ``python -m shoal``.

As in test_examples.py the eager threshold is 0, so these tiny sizes take Shoal's lazy path and
every batch is verified and round-tripped through the wire format. Kernels that use a function
``shoal.numpy`` does not implement yet (``add.reduceat``, ``minimum.accumulate``,
``fill_diagonal``) run it through the NumPy fallback, whose warning is allowed here; a
RuntimeWarning is an error under NumPy and must not appear under Shoal.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import checksum_runs
import pytest

LOOPS = Path(__file__).resolve().parent.parent / "benchmarks" / "loops"


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
    Kernel("game_of_life", ("30", "--steps", "4")),
    Kernel("floyd_warshall", ("30",)),
    Kernel("gramschmidt", ("30",)),
    Kernel("heat_3d", ("12", "--steps", "2")),
    Kernel("iir_filter", ("30",)),
    Kernel("jacobi_1d", ("500", "--steps", "5")),
    Kernel("lu", ("30", "--repeat", "2")),
    Kernel("mlp", ("40", "--steps", "2")),
    Kernel("rank_one_updates", ("30", "--steps", "5")),
    Kernel("softmax_rows", ("30",)),
    Kernel("syrk", ("30",)),
    Kernel("trmm", ("30",)),
]


def assert_same_checksum(kernel: Kernel) -> None:
    checksum_runs.assert_same_checksum(kernel.path, kernel.arguments)


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

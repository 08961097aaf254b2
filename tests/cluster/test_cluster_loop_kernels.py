"""Row and element loops of the loop-pattern suite (``benchmarks/loops``) print NumPy's checksum at
2 and 3 ranks, at the default thresholds (``python -m shoal`` as users run it: their matrices
are lazy and distributed, their loops take the bases back to rank 0, ``shoal/local_loops.py``).

ADI's grid is a random draw that the other ranks draw too (``shoal/cluster/drawn_ahead.py``): a
held draw that the loop wrote once went back to the ranks as their own draw, not as its values.
"""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from cluster.harness import environment, lines, run, run_numpy

pytestmark = pytest.mark.full

LOOPS = Path(__file__).resolve().parents[2] / "benchmarks" / "loops"
CASES = [
    ("adi", ("800", "--steps", "1")),
    ("cholesky", ("800",)),
    ("diagonal_trace", ("800", "--steps", "2")),
    ("edit_distance", ("800",)),
    ("gauss_seidel", ("800", "--steps", "1")),
    ("gramschmidt", ("800", "--steps", "10")),
    ("iir_filter", ("800",)),
    ("lu", ("800", "--steps", "20")),
    ("softmax_rows", ("800",)),
    ("trisolv", ("800", "--repeat", "2")),
    ("trmm", ("800", "--steps", "50")),
]


@functools.cache
def numpy_checksum(kernel: str, arguments: tuple[str, ...]) -> float:
    result = run_numpy(LOOPS / f"{kernel}.py", *arguments)
    assert result.returncode == 0, result.stderr
    (value,) = lines(result.stdout, "checksum:")
    return float(value)


@pytest.mark.timeout(240)
@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize(("kernel", "arguments"), CASES, ids=[kernel for kernel, _ in CASES])
def test_loop_kernel_checksum_on_the_cluster(kernel: str, arguments: tuple[str, ...], ranks: int) -> None:
    env = environment()
    for default in ("SHOAL_EAGER_THRESHOLD", "SHOAL_SETTLED_THRESHOLD", "SHOAL_CLUSTER_MIN_BYTES"):
        del env[default]  # as `mpiexec -n N python -m shoal app.py` runs
    result = run(ranks, LOOPS / f"{kernel}.py", *arguments, env=env)
    assert result.returncode == 0, result.stderr
    (value,) = lines(result.stdout, "checksum:")
    assert float(value) == pytest.approx(numpy_checksum(kernel, arguments), rel=1e-9, abs=0)

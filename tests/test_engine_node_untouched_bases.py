"""Operations that need a base but touch none of its bytes still come before its release.

A boolean mask that selects nothing gives an empty index array; the scatter that reads it
touches no base-block of it, so it once had no dependency on the index array's release. Run in
another order than the program's (on two threads, or in reverse), the release freed the index
array first and the scatter failed with ``EngineError: base N is not live``: a correlation
matrix filled column by column crashed under ``python -m shoal`` at 1600 x 2000.
"""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest
from engine_node_harness import run_both
from engine_node_recorder import Recorder
from numpy_fixtures import AGAINST_NUMPY

from shoal import runtime
from shoal.engine.blocks.dependencies import BlockOp, DependencyLists

CORRELATION = """
import sys
import numpy as np

M, N = int(sys.argv[1]), int(sys.argv[2])
rng = np.random.default_rng(0)
data = rng.random((N, M))
mean = np.mean(data, axis=0)
stddev = np.std(data, axis=0)
stddev[stddev <= 0.1] = 1.0
data -= mean
data /= np.sqrt(float(N)) * stddev
corr = np.eye(M, dtype=data.dtype)
for i in range(M - 1):
    corr[i + 1:M, i] = corr[i, i + 1:M] = data[:, i] @ data[:, i + 1:M]
print("checksum", float(corr.sum()))
"""

ROWS_AFTER_AN_EMPTY_MASK = """
M, N = 1500, 1000
data = np.ones((N, M)); s = np.ones(M)
s[s <= 0.1] = 1.0
corr = np.zeros((M, M))
for i in range(3):
    corr[i, i + 1:M] = data[:, i] @ data[:, i + 1:M]
result = float(corr.sum())
"""


def test_release_waits_for_an_operation_that_touches_no_block():
    deps = DependencyLists()
    reader = BlockOp(1, lambda: None, reads=(), writes=((2, 0),), bases=(1, 2), written=(2,))
    release = BlockOp(2, lambda: None, reads=(), writes=((1, 0),), frees=1)
    deps.insert(reader)
    deps.insert(release)
    assert (1, 0) in reader.reads
    assert release in reader.dependents and release.refcount == 1


@pytest.mark.parametrize("schedule", ["program", "reverse"])
@pytest.mark.parametrize("threads", [1, 2])
def test_scatter_through_an_empty_index_array_then_release(schedule, threads):
    def program(rec: Recorder):
        values = rec.array(np.arange(12.0))
        indices = rec.array(np.zeros(0, np.int64))
        rec.emit("scatter", (values,), (1.5, indices), key=(("array", 0),))
        rec.release(indices)
        doubled = rec.ufunc("multiply", values, 2.0)
        return [values, doubled]

    run_both(program, block=4, threads=threads, schedule=schedule, batches=3)


@pytest.mark.skipif(AGAINST_NUMPY, reason="runs the Shoal runtime")
@pytest.mark.parametrize("engine", ["node", "reference"])
def test_rows_after_an_empty_mask_match_numpy(engine):
    expected: dict = {}
    exec(ROWS_AFTER_AN_EMPTY_MASK, {"np": np}, expected)
    import shoal.numpy as snp

    got: dict = {}
    with runtime.configure(engine=engine, eager_threshold=0):
        exec(ROWS_AFTER_AN_EMPTY_MASK, {"np": snp}, got)
    assert got["result"] == expected["result"] == 4494000.0


def correlation_checksum(size: tuple[int, int], tmp_path, engine: str | None) -> float:
    program = tmp_path / "corr.py"
    program.write_text(CORRELATION)
    environment = {key: value for key, value in os.environ.items() if not key.startswith("SHOAL_")}
    if engine is not None:
        environment["SHOAL_ENGINE"] = engine
    result = subprocess.run(
        [sys.executable, "-W", "error", "-W", "always::RuntimeWarning", "-m", "shoal", str(program), *map(str, size)],
        env=environment,
        capture_output=True,
        text=True,
        timeout=110,
    )
    assert result.returncode == 0, result.stderr
    assert "RuntimeWarning" not in result.stderr, result.stderr
    return float(result.stdout.split()[-1])


@pytest.mark.full
@pytest.mark.timeout(240)
def test_correlation_matrix_column_by_column(tmp_path):
    """The program from the report, at the size where it crashed, with default settings, against
    the reference engine."""
    size = (1600, 2000)
    node = correlation_checksum(size, tmp_path, None)
    reference = correlation_checksum(size, tmp_path, "reference")
    assert node == pytest.approx(reference, rel=1e-12)

"""Laziness: operations are recorded, and run only at the flush triggers."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from numpy_fixtures import LAZY_MODES, Mode, assert_same, flush_count, needs_runtime, shoal_numpy

# A batch larger than anything these tests record: only the triggers under test flush.
LARGE_BATCH = 1 << 20


@pytest.fixture(params=LAZY_MODES, ids=lambda mode: mode.label)
def recording(request: pytest.FixtureRequest) -> Iterator[ModuleType]:
    """``shoal.numpy`` with every array lazy, recorded, and no size-triggered flushes."""
    needs_runtime()
    with shoal_numpy(request.param, flush_threshold=LARGE_BATCH, settled_threshold=0) as module:
        yield module


def pending_program(snp: ModuleType) -> tuple[Any, np.ndarray]:
    """Record a small program without reading anything; return its last array and NumPy's."""
    expected = np.arange(10.0) * 3 - 1
    expected[2:5] = expected[::-1][2:5] + 0.5
    array = snp.arange(10.0) * 3 - 1
    array[2:5] = array[::-1][2:5] + 0.5
    return array, expected


def test_recording_does_not_flush(recording: ModuleType) -> None:
    before = flush_count()
    array, _ = pending_program(recording)
    grid = array.reshape(2, 5)
    total = grid.sum(axis=0, keepdims=True)
    grid[:, 1] += total[0, 1]
    flipped = grid.T[::-1]
    _ = flipped.mean(), recording.where(grid > 3, grid, 0), grid @ grid.T
    _ = (flipped.shape, flipped.dtype, flipped.ndim, flipped.size, flipped.strides, flipped.T)
    _ = (flipped.itemsize, flipped.nbytes, len(flipped), flipped.base is not None)
    assert flush_count() == before


TRIGGERS: dict[str, Callable[[Any], Any]] = {
    "bool": lambda a: bool(a[3, ...] > 0),
    "float": lambda a: float(a[3, ...]),
    "int": lambda a: int(a[3, ...]),
    "complex": lambda a: complex(a[3, ...]),
    "index": lambda a: [0, 1, 2, 3, 4][a.astype(int)[0, ...] % 5],
    "repr": repr,
    "str": str,
    "format": lambda a: f"{a[3, ...]:.3f}",
    "array-protocol": np.asarray,
    "item": lambda a: a.item(3),
    "tolist": lambda a: a.tolist(),
    "iteration": list,
    "for-loop": lambda a: [value for value in a[:4]],
    "in": lambda a: 26.0 in a,
    "shoal.flush": lambda a: __import__("shoal").flush(),
}


@pytest.mark.parametrize("trigger", TRIGGERS, ids=str)
def test_each_trigger_flushes_once(recording: ModuleType, trigger: str) -> None:
    array, expected = pending_program(recording)
    before = flush_count()
    result = TRIGGERS[trigger](array)
    assert flush_count() == before + 1
    if trigger == "array-protocol":
        assert type(result) is np.ndarray
        np.testing.assert_array_equal(result, expected, strict=True)
    elif trigger != "shoal.flush":
        assert result == TRIGGERS[trigger](expected)
    assert_same(array, expected)


def test_print_flushes(recording: ModuleType, capsys: pytest.CaptureFixture[str]) -> None:
    array, expected = pending_program(recording)
    before = flush_count()
    print(array)
    assert flush_count() == before + 1
    assert capsys.readouterr().out == f"{expected}\n"


def test_reading_twice_flushes_once(recording: ModuleType) -> None:
    array, expected = pending_program(recording)
    before = flush_count()
    assert array.tolist() == expected.tolist()
    assert array.tolist() == expected.tolist()
    assert flush_count() == before + 1


def test_flush_with_nothing_recorded_does_nothing(recording: ModuleType) -> None:
    import shoal

    shoal.flush()
    before = flush_count()
    shoal.flush()
    assert flush_count() == before


def test_batch_size_threshold_flushes_without_a_read(monkeypatch: pytest.MonkeyPatch) -> None:
    needs_runtime()
    monkeypatch.setenv("SHOAL_SETTLED_THRESHOLD", "0")  # else the settled array is updated in place
    with shoal_numpy(LAZY_MODES[0], flush_threshold=8) as snp:
        array = snp.arange(100.0)
        before = flush_count()
        array += 1
        assert flush_count() == before
        for _ in range(40):
            array += 1
        assert flush_count() >= before + 4
        assert_same(array, np.arange(100.0) + 41)


def test_small_arrays_are_plain_numpy_and_never_flush() -> None:
    needs_runtime()
    with shoal_numpy(Mode(LAZY_MODES[0].engine, lazy=False)) as snp:
        array = snp.arange(10.0) * 2
        assert type(array) is np.ndarray
        assert isinstance(array, snp.ndarray)
        assert float(array.sum()) == 90.0
        assert flush_count() == 0


def test_lazy_arrays_are_shoal_arrays(recording: ModuleType) -> None:
    array = recording.arange(10.0)
    assert isinstance(array, recording.ndarray)
    assert not isinstance(array, np.ndarray) or type(array) is recording.ndarray
    assert type(array * 2) is type(array)
    assert type(array[::2]) is type(array)


def test_program_exit_runs_pending_work(tmp_path) -> None:
    needs_runtime()
    program = textwrap.dedent(
        """
        import shoal.numpy as np
        a = np.arange(50.0)
        b = (a * 2).reshape(5, 10)
        b[1:, ::2] += 1
        """
    )
    env = {
        **os.environ,
        "SHOAL_EAGER_THRESHOLD": "0",
        "SHOAL_SETTLED_THRESHOLD": "0",  # recorded: small arrays are not made at once
        "SHOAL_DUMP": "1",
        "SHOAL_ENGINE": "reference",
    }
    finished = subprocess.run(
        [sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=60
    )
    assert finished.returncode == 0, finished.stderr
    assert finished.stderr.strip(), "no batch ran at exit"
    assert finished.stdout == ""


def test_where_over_numpy_inputs_is_numpy_where_and_large_results_become_lazy() -> None:
    import shoal.numpy as snp
    from shoal import runtime

    with runtime.configure(engine="reference", eager_threshold=100):
        condition = np.arange(10) % 3 == 0
        small = snp.where(condition, np.arange(10.0), -1)
        assert type(small) is np.ndarray
        np.testing.assert_array_equal(small, np.where(condition, np.arange(10.0), -1))
        large = snp.where(np.arange(200) > 50, 1.5, np.arange(200, dtype=np.int32))
        assert type(large) is snp.ndarray
        expected = np.where(np.arange(200) > 50, 1.5, np.arange(200, dtype=np.int32))
        assert large.dtype == expected.dtype
        np.testing.assert_array_equal(np.asarray(large), expected)
        with pytest.raises(ValueError, match="could not be broadcast"):
            snp.where(np.ones(3, bool), np.ones(4), 0)
        with pytest.raises(ValueError, match="either both or neither"):
            snp.where(condition, np.arange(10.0))
        assert [list(i) for i in snp.where(condition)] == [list(i) for i in np.where(condition)]


def test_where_over_numpy_inputs_is_lazy_when_large_also_as_the_first_call_of_a_program() -> None:
    program = (
        "import numpy, shoal.numpy as snp\n"
        "result = snp.where(numpy.arange(600_000) % 2 == 0, 1.0, -1.0)\n"
        "assert type(result) is snp.ndarray, type(result)\n"
        "assert float(snp.sum(result)) == 0.0\n"
    )
    env = {**os.environ, "SHOAL_ENGINE": "", "SHOAL_COMPILE": "off"}
    finished = subprocess.run([sys.executable, "-c", program], env=env, capture_output=True, text=True, timeout=60)
    assert finished.returncode == 0, finished.stderr

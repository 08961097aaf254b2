"""Pickled Shoal arrays are NumPy pickles, and impossible allocations fail where NumPy's do."""

from __future__ import annotations

import copy
import pickle
import subprocess
import sys
import traceback
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from numpy_fixtures import assert_same

_LOAD_WITHOUT_SHOAL = """
import pickle, sys
with open(sys.argv[1], "rb") as f:
    values = pickle.load(f)
assert "shoal" not in sys.modules, sorted(m for m in sys.modules if m.startswith("shoal"))
print(repr([(type(v).__module__, type(v).__name__, getattr(v, "dtype", None), getattr(v, "shape", None)) for v in values]))
print(repr([v.tolist() for v in values]))
"""


def test_pickle_is_a_plain_numpy_pickle(snp: ModuleType, tmp_path: Path) -> None:
    expected = [np.arange(12.0).reshape(3, 4)[:, ::2] * 2, np.arange(6, dtype=np.int16), np.float64(66.0)]
    lazy = snp.arange(12.0).reshape(3, 4)[:, ::2] * 2
    values = [lazy, snp.arange(6, dtype=np.int16), snp.arange(12.0).sum()]
    assert all(type(v) is snp.ndarray for v in values[:2])
    path = tmp_path / "arrays.pkl"
    path.write_bytes(pickle.dumps(values, protocol=pickle.HIGHEST_PROTOCOL))
    assert b"shoal" not in path.read_bytes()
    # The file loads in an interpreter that never imports Shoal (run from a folder without it).
    loaded = subprocess.run(
        [sys.executable, "-I", "-c", _LOAD_WITHOUT_SHOAL, str(path)],
        cwd=tmp_path, capture_output=True, text=True, check=True, timeout=60,
    )  # fmt: skip
    kinds, contents = loaded.stdout.splitlines()
    assert kinds == repr([(type(v).__module__, type(v).__name__, v.dtype, v.shape) for v in expected])
    assert contents == repr([v.tolist() for v in expected])
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        for value, reference in zip(values, expected):
            restored = pickle.loads(pickle.dumps(value, protocol=protocol))
            assert type(restored) is type(reference)
            assert_same(restored, reference)


def test_copies_stay_lazy_and_independent(snp: ModuleType) -> None:
    lazy = snp.arange(8.0)
    for duplicate in (copy.copy(lazy), copy.deepcopy(lazy)):
        assert type(duplicate) is snp.ndarray
        duplicate[0] = 100.0
        assert_same(lazy, np.arange(8.0))


def _failure(call) -> BaseException:
    try:
        call()
    except (MemoryError, ValueError) as error:
        return error
    raise AssertionError("no error")


@pytest.mark.parametrize(
    "make",
    [
        lambda xp: xp.zeros((10**6, 10**6)),
        lambda xp: xp.ones((2**20, 2**20), dtype=np.float32),
        lambda xp: xp.empty((2**40, 2**40)),
        lambda xp: xp.full((3, 2**45), 1.5),
        lambda xp: xp.arange(4.0 * 10**12),
    ],
    ids=["zeros", "ones", "too-big", "full", "arange"],
)
def test_impossible_allocation_fails_at_the_line_that_asked(snp: ModuleType, make) -> None:
    expected = _failure(lambda: make(np))
    actual = _failure(lambda: make(snp))
    assert type(actual) is type(expected)
    assert str(actual) == str(expected)
    # Raised by the call itself (in ``make``), not later when something reads a value.
    frames = traceback.extract_tb(actual.__traceback__)
    assert [frame.name for frame in frames[:3]] == ["_failure", "<lambda>", "<lambda>"]
    assert frames[2].lineno == make.__code__.co_firstlineno


def test_large_possible_allocation_is_still_lazy(snp: ModuleType) -> None:
    lazy = snp.zeros((300, 400))
    assert type(lazy) is snp.ndarray
    assert_same(lazy.sum(), np.float64(0.0))

"""Indexing a held base through the lazy class's slots (``shoal/numpy/_slots.py``).

The compiled slots (``_held_slots.c``) index the held memory themselves in the common cases and
leave the rest to the class's ``_getitem`` / ``_setitem``; without them the class's methods do
it all. Reads, writes (with their casts, warnings and errors) and deletions of a held array are
compared with NumPy's for keys and values of every case on both sides of that split; the whole
module runs again in a process with ``SHOAL_COMPILED_INDEXING=off``.
"""

from __future__ import annotations

import ctypes
import gc
import inspect
import operator
import os
import shutil
import subprocess
import sys
import warnings
import weakref
from pathlib import Path

import numpy
import pytest

import shoal.numpy as snp
from shoal import info, runtime
from shoal.numpy import _slots

TESTS = Path(__file__).resolve().parent


def _held_pair(rt: runtime.Runtime, dtype: str = "float64", shape: tuple[int, int] = (6, 5)) -> tuple[snp.ndarray, numpy.ndarray]:
    """A held lazy array (of ``shape``) and the NumPy array with its values."""
    expected = (numpy.arange(float(shape[0] * shape[1])).reshape(shape) * 1.5).astype(dtype)
    a = snp.array(expected)
    for i in range(1, shape[0]):
        a[i, 0] = a[i - 1, 0]
        expected[i, 0] = expected[i - 1, 0]
    assert a._base.id in rt.held and a._held is not None
    return a, expected


def _outcome(action):
    """What ``action()`` gave: its value, or its exception's type and message; and warnings."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            value = action()
        except Exception as error:  # the comparison is the point
            value = (type(error), str(error))
    if isinstance(value, (numpy.ndarray, snp.ndarray)):
        value = (numpy.asarray(value).dtype, numpy.asarray(value).tolist())
    elif isinstance(value, numpy.generic):
        value = (type(value), value.item())
    return value, [(item.category, str(item.message), item.lineno) for item in caught]


READ_KEYS = [
    (3, 4),
    (numpy.int64(3), 4),
    (numpy.int32(2), -1),
    (numpy.intp(1),),
    5,
    -2,
    (3, slice(1, -1)),
    (3, [1, 2]),
    (slice(None), 2),
    (numpy.uint8(2), 1),  # a NumPy integer the slots leave to Python
    (Ellipsis, 1),
    (None, 2),
    (),
    (True,),
    slice(1, 4),
    (6, 0),  # out of range: NumPy's IndexError
    -7,
    (1.5, 0),  # not an index: NumPy's IndexError
]


@pytest.mark.parametrize("key", READ_KEYS, ids=repr)
def test_a_read_of_a_held_array_is_numpy_s(lazy, key):
    a, expected = _held_pair(lazy)
    assert _outcome(lambda: a[key]) == _outcome(lambda: expected[key])


WRITES = [
    ((2,), lambda: numpy.full(5, 7.25)),  # NumPy array of the memory's dtype
    ((2, slice(1, 3)), lambda: numpy.array([1.5, 2.5], dtype=numpy.float32)),  # another dtype: cast
    ((1, 1), lambda: 3.5),
    ((1, 1), lambda: 4),
    ((0, 0), lambda: numpy.float32(0.1)),
    ((0,), lambda: [1, 2, 3, 4, 5]),
    ((0, 0), lambda: 1 + 2j),  # NumPy's ComplexWarning, at this line
    ((0,), lambda: numpy.ones(4)),  # does not broadcast: NumPy's ValueError
    ((9,), lambda: 1.0),  # out of range
]


@pytest.mark.parametrize(("key", "make"), WRITES, ids=lambda item: repr(item) if not callable(item) else "")
def test_a_write_into_a_held_array_is_numpy_s(lazy, key, make):
    a, expected = _held_pair(lazy)

    def write(target):
        def action():
            target[key] = make()  # a warning names this line for both

        return action

    assert _outcome(write(a)) == _outcome(write(expected))
    numpy.testing.assert_array_equal(numpy.asarray(a), expected)


def test_an_integer_out_of_range_of_a_held_int8_array_raises_numpy_s_error(lazy):
    a, expected = _held_pair(lazy, "int8")

    def write(target):
        def action():
            target[1, 1] = 300

        return action

    assert _outcome(write(a)) == _outcome(write(expected))
    assert _outcome(write(a))[0][0] is OverflowError


@pytest.mark.parametrize("key", [(slice(None), 3), slice(2, 4), (slice(1, 3), slice(None)), ()], ids=repr)
def test_a_large_view_of_a_held_array_goes_back_to_lazy_work(lazy, key):
    a, expected = _held_pair(lazy, shape=(100, 1000))  # large: 64 elements (the settled threshold)
    small = a[5:7, 3]  # a column by slices, under the threshold: NumPy's view of the memory
    assert type(small) is numpy.ndarray and small.tolist() == expected[5:7, 3].tolist()
    del small
    view = a[key]
    assert type(view) is snp.ndarray and a._base.id in lazy.held  # a lazy view; the base held until work is recorded on it
    doubled = view * 2.0
    assert a._base.id not in lazy.held  # recorded work on the view handed it back
    numpy.testing.assert_array_equal(numpy.asarray(view), expected[key])
    numpy.testing.assert_array_equal(numpy.asarray(doubled), expected[key] * 2.0)


ITEM_ARGUMENTS = [(3,), (1, 2), ((1, 2),), (numpy.int64(2), 1), (), (6, 0), (1, 2, 3), (-1,), (1.5,)]


@pytest.mark.parametrize("arguments", ITEM_ARGUMENTS, ids=repr)
@pytest.mark.parametrize("shape", [(6, 5), (1, 1)], ids=["held", "one element"])
def test_item_of_a_held_array_is_numpy_s(lazy, arguments, shape):
    a, expected = _held_pair(lazy) if shape == (6, 5) else (snp.full(shape, 2.5), numpy.full(shape, 2.5))
    assert _outcome(lambda: a.item(*arguments)) == _outcome(lambda: expected.item(*arguments))
    assert _outcome(lambda: a.item(x=1))[0][0] is _outcome(lambda: expected.item(x=1))[0][0]


def test_item_has_numpy_s_signature():
    def parameters(method):
        return [(parameter.name, parameter.kind) for parameter in inspect.signature(method).parameters.values()]

    assert parameters(snp.ndarray.item) == parameters(numpy.ndarray.item)


@pytest.mark.parametrize("key", [(1, 1), 2, slice(0, 2)], ids=repr)
def test_deleting_an_element_raises_numpy_s_error(lazy, key):
    a, expected = _held_pair(lazy)

    def delete(target):
        def action():
            del target[key]

        return action

    assert _outcome(delete(a)) == _outcome(delete(expected))
    lone = snp.zeros(10)  # not held
    assert _outcome(delete(lone)) == _outcome(delete(numpy.zeros(10)))


def test_after_the_hand_back_reads_and_writes_are_recorded_again(lazy):
    a, expected = _held_pair(lazy, shape=(100, 1000))  # 1,500x the settled threshold
    total = float(a.sum())  # recorded: the base goes back to the engine
    assert a._held is None and a._base.id not in lazy.held
    assert total == float(expected.sum())
    a[2, 3] = -1.0
    expected[2, 3] = -1.0
    assert float(a[2, 3]) == -1.0 and float(a[4, 1]) == float(expected[4, 1])
    numpy.testing.assert_array_equal(numpy.asarray(a), expected)


class _EndingIndex:
    """An index whose ``__index__`` runs recorded work on ``array`` (Python code in the middle of
    NumPy's indexing of the held memory, which asks to end the hold)."""

    def __init__(self, array, value: int) -> None:
        self.array, self.value = array, value

    def __index__(self) -> int:
        if self.array is not None:
            float(self.array.sum())  # recorded: the base goes back to the engine
            self.array = None
            gc.collect()
        return self.value


def test_an_index_that_ends_the_hold_mid_read_or_write(lazy):
    a, expected = _held_pair(lazy, shape=(100, 1000))
    assert float(a[_EndingIndex(a, 7), 3]) == expected[7, 3]  # the hold stays: the read references the memory
    b, expected = _held_pair(lazy, shape=(100, 1000))
    row = numpy.full(1000, -2.0)
    b[_EndingIndex(b, 9)] = row
    expected[9] = row
    numpy.testing.assert_array_equal(numpy.asarray(b), expected)


def test_an_array_lets_go_of_its_held_view(lazy):
    a, _ = _held_pair(lazy)
    view = weakref.ref(a._held)
    quiet = a._quiet
    before = sys.getrefcount(quiet)
    del a
    gc.collect()
    assert view() is None
    assert sys.getrefcount(quiet) == before - 1


@pytest.mark.parametrize("shape", [(6, 5), (100, 1000)], ids=["held", "not held"])
def test_the_lazy_class_is_a_sequence_as_with_a_python_getitem(lazy, shape):
    """A class with a Python ``__getitem__`` fills the sequence slots too: ``reversed()`` and
    C code asking ``PySequence_Check`` (pandas' ``is_scalar``) must see the same class."""
    a, expected = _held_pair(lazy) if shape == (6, 5) else (snp.ones(shape), numpy.ones(shape))
    assert ctypes.pythonapi.PySequence_Check(ctypes.py_object(a)) == 1
    assert [row.tolist() for row in reversed(a)] == [row.tolist() for row in reversed(expected)]
    assert numpy.asarray(operator.getitem(a, -1)).tolist() == expected[-1].tolist()


def test_the_setting_chooses_the_slots():
    built = importable("shoal.numpy._held_slots")
    wanted = os.environ.get("SHOAL_COMPILED_INDEXING", "on") != "off"
    assert _slots.COMPILED == (built and wanted)
    assert ("__getitem__" in vars(snp.ndarray)) == (not _slots.COMPILED)  # a Python method would hide the C slot
    assert info.indexing().startswith("compiled slots" if _slots.COMPILED else "Python")


def importable(module: str) -> bool:
    try:
        __import__(module)
    except ImportError:
        return False
    return True


@pytest.mark.full
@pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None, reason="no C compiler: the slots are not built")
def test_the_install_built_the_compiled_slots():
    assert importable("shoal.numpy._held_slots"), "pip install -e . should have compiled shoal/numpy/_held_slots.c"


@pytest.mark.skipif(os.environ.get("SHOAL_COMPILED_INDEXING") == "off", reason="this is the run without the compiled slots")
def test_the_same_cases_pass_with_the_python_slots():
    env = dict(os.environ, SHOAL_COMPILED_INDEXING="off")
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-m", "not full", str(Path(__file__))],
        env=env,
        capture_output=True,
        text=True,
        timeout=110,
        cwd=TESTS.parent,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert " passed" in result.stdout and " failed" not in result.stdout

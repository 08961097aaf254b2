"""Programs that subclass ``np.ndarray``, annotate with ``np.ndarray[...]`` or delete elements.

Under ``python -m shoal`` a program's ``np.ndarray`` is Shoal's lazy class. A class statement
deriving from it made a class NumPy did not know (``np.asarray(x).view(cls)`` then read ``cls``
as a dtype and raised), and ``np.ndarray[Any, np.dtype[np.float64]]`` in a signature raised
TypeError before the program ran. Each case runs on NumPy and on Shoal with every array lazy.
"""

from __future__ import annotations

import collections
from typing import Any

import numpy
import pytest

import shoal.numpy as snp
from shoal import runtime
from shoal.errors import ShoalFallbackWarning
from shoal.numpy import _dispatch, _held_indexing


@pytest.fixture
def lazy():
    with runtime.configure(engine="node", eager_threshold=0) as rt:
        yield rt


def tagged_class(np):
    class Tagged(np.ndarray):
        def __new__(cls, data, tag="x"):
            obj = np.asarray(data).view(cls)
            obj.tag = tag
            return obj

        def __array_finalize__(self, obj):
            self.tag = getattr(obj, "tag", None)

    return Tagged


def subclass_program(np):
    Tagged = tagged_class(np)
    base = np.arange(24.0).reshape(4, 6) * 2
    tagged = Tagged(base, tag="grid")
    doubled = tagged * 2
    tagged[1, 2] = -1.0  # a view: the write is the base's too
    base[0, 0] = 99.0  # and the other way round
    return [
        type(tagged).__name__,
        tagged.tag,
        type(doubled).__name__,
        doubled.tag,
        numpy.asarray(doubled).tolist(),
        numpy.asarray(base).tolist(),
        numpy.asarray(tagged).tolist(),
        isinstance(tagged, np.ndarray),
        issubclass(Tagged, numpy.ndarray),
    ]


def test_a_subclass_of_ndarray_is_numpys_and_views_the_lazy_memory(lazy):
    assert subclass_program(snp) == subclass_program(numpy)


def test_view_into_a_subclass_with_a_dtype(lazy):
    def program(np):
        Tagged = tagged_class(np)
        values = np.arange(8.0) + 1
        viewed = values.view(np.int64, Tagged)
        values[3] = 0.0
        return [type(viewed).__name__, numpy.asarray(viewed).tolist()]

    assert program(snp) == program(numpy)


def test_views_of_the_plain_classes_stay_lazy(lazy):
    values = snp.arange(8.0) * 3
    for view in (values.view(snp.ndarray), values.view(numpy.ndarray), values.view(type=numpy.ndarray)):
        assert type(view) is snp.ndarray
        numpy.testing.assert_array_equal(numpy.asarray(view), numpy.arange(8.0) * 3)


def test_a_view_into_what_is_no_ndarray_subclass_raises_numpys_error(lazy):
    with pytest.raises(ValueError) as expected:
        numpy.arange(4.0).view(type=int)
    with pytest.raises(ValueError) as got:
        (snp.arange(4.0) * 1).view(type=int)
    assert str(got.value) == str(expected.value)


def test_a_view_into_a_subclass_where_memory_cannot_be_held_warns_and_copies(lazy, monkeypatch):
    """A component that does not hand its memory out (an MPI cluster's is spread over ranks)."""
    monkeypatch.setattr(_held_indexing, "held_memory", lambda array: None)
    monkeypatch.setattr(_dispatch, "FALLBACKS", collections.Counter())  # warned once per process
    Tagged = tagged_class(snp)
    values = snp.arange(6.0) * 2
    with pytest.warns(ShoalFallbackWarning, match="ndarray.view into a subclass"):
        viewed = values.view(Tagged)
    assert type(viewed) is Tagged
    numpy.testing.assert_array_equal(viewed, numpy.arange(6.0) * 2)


def test_ndarray_subscripted_in_annotations_is_numpys_generic_alias():
    def annotated(np):
        def scale(x: np.ndarray[Any, np.dtype[np.float64]]) -> np.ndarray[Any, np.dtype[np.float64]]:
            return x * 2

        return scale.__annotations__["x"]

    assert annotated(snp) == annotated(numpy)
    assert snp.ndarray[Any, numpy.dtype[numpy.float64]] == numpy.ndarray[Any, numpy.dtype[numpy.float64]]


def test_deleting_elements_raises_numpys_error(lazy):
    for np in (numpy, snp):
        values = np.arange(5.0) * 1
        with pytest.raises(ValueError, match=r"^cannot delete array elements$"):
            del values[0]

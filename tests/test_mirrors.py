"""Copies of settled bases for a component that offers no memory (``shoal/mirrors.py``): a loop
of small reads is served from one fetched copy with NumPy's values; a write, a release or a large
base drops or prevents the copy, and the values stay NumPy's."""

from __future__ import annotations

import gc

import numpy
import pytest

import shoal.numpy as snp
from shoal import mirrors, runtime


@pytest.fixture
def remote():
    """A stack whose top component offers no memory (the pass-through), every array lazy."""
    with runtime.configure(engine="pass:node", eager_threshold=0, flush_threshold=4096, settled_threshold=64) as rt:
        assert not rt.offers_memory()
        yield rt


def _grid() -> numpy.ndarray:
    return numpy.arange(10000.0).reshape(100, 100) / 7.0


def test_a_loop_of_element_reads_fetches_the_base_once(remote):
    a = snp.array(_grid()) * 1.0
    float(a[0, 0])
    flushes = remote.stats.flushes
    total = 0.0
    for i in range(100):
        total += float(snp.tanh(a[i, i]))
    assert remote.stats.flushes - flushes < mirrors.MIRROR_ACCESSES  # one per read until the copy, none after
    assert list(remote._mirrors) == [a._base.id]
    assert total == sum(float(numpy.tanh(v)) for v in numpy.diag(_grid()))


def test_a_write_drops_the_copy_and_reads_see_it(remote):
    a = snp.array(_grid()) * 1.0
    expected = _grid().copy()
    for i in range(40):
        assert float(a[i, i]) == expected[i, i]
    assert a._base.id in remote._mirrors
    a[5, 5] = -1.0
    expected[5, 5] = -1.0
    assert float(a[5, 5]) == -1.0 and a._base.id not in remote._mirrors
    a += 1.0
    expected += 1.0
    reads = [float(a[i, (i * 7) % 100]) for i in range(60)]
    assert reads == [expected[i, (i * 7) % 100] for i in range(60)]
    row = a[3, :10] * 2.0  # a small view computed by NumPy on the copy
    numpy.testing.assert_array_equal(row, expected[3, :10] * 2.0)


def test_the_copy_is_read_only_and_goes_with_its_base(remote):
    a = snp.array(_grid()) + 0.0
    for i in range(40):
        float(a[i, 0])
    copy = remote._mirrors[a._base.id]
    assert not copy.flags.writeable
    del a
    gc.collect()
    snp.ones(100) + 1.0  # a flush records the release
    remote.flush()
    assert not remote._mirrors


def test_a_base_larger_than_the_limit_is_never_copied(remote, monkeypatch):
    monkeypatch.setattr(mirrors, "MIRROR_BYTES", 1024)
    a = snp.array(_grid()) * 1.0
    assert [float(a[i, i]) for i in range(40)] == [float(v) for v in numpy.diag(_grid())[:40]]
    assert not remote._mirrors


def test_a_component_that_offers_memory_is_never_copied():
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=4096, settled_threshold=64) as rt:
        a = snp.array(_grid()) * 1.0
        assert [float(a[i, i]) for i in range(40)] == [float(v) for v in numpy.diag(_grid())[:40]]
        assert not rt._mirrors and not rt._mirror_reads

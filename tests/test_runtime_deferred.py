"""Bases given their data are declared to the component only once an instruction names them
(``Runtime.new_base``, ``_deferred``): values, reads, in-place writes, reinterpreting views and
releases must be what NumPy gives, whether or not the base ever reaches the component."""

from __future__ import annotations

import gc

import numpy
import pytest

import shoal.numpy as snp
from shoal import runtime

ENGINES = ["node", "reference"]


@pytest.fixture(params=ENGINES)
def lazy(request, monkeypatch):
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    with runtime.configure(engine=request.param, eager_threshold=0, flush_threshold=64, settled_threshold=64) as rt:
        yield rt


def _instructions(rt) -> list[str]:
    return [instruction.op for instruction in rt._pending.instructions]


def test_a_result_only_numpy_touches_never_reaches_the_component(lazy):
    grid = snp.arange(100.0).reshape(10, 10)
    float(grid[0, 0])
    flushes = lazy.stats.flushes
    total = 0.0
    for i in range(1, 9):
        row = grid[i, 1:-1] * 2.0 + grid[i - 1, 1:-1]  # computed by NumPy at once: new deferred bases
        total += float(row[3])
        del row
    gc.collect()
    assert lazy.stats.flushes == flushes
    assert "release" not in _instructions(lazy) and not lazy._pending.bases
    assert not lazy._deferred or all(base not in lazy._pending.data for base in lazy._deferred)
    expected = numpy.arange(100.0).reshape(10, 10)
    assert total == sum(float((expected[i, 1:-1] * 2.0 + expected[i - 1, 1:-1])[3]) for i in range(1, 9))


def test_a_deferred_base_is_declared_when_an_instruction_names_it(lazy):
    small = snp.array(numpy.arange(6.0))
    assert small._base.id in lazy._deferred
    large = snp.ones(200)
    combined = large[:6] + small  # 6 elements read from a base with pending work: recorded
    assert small._base.id not in lazy._deferred
    assert any(decl.id == small._base.id for decl in lazy._pending.bases)
    numpy.testing.assert_array_equal(combined, numpy.arange(6.0) + 1.0)


def test_writes_in_place_before_the_declaration_are_what_the_component_receives(lazy):
    values = snp.array(numpy.zeros(8))
    values[2:4] = 5.0  # written in the held data
    values[5] = -1.0
    big = snp.zeros(100)
    big[:8] += values  # recorded: declares ``values`` with its data as written
    expected = numpy.zeros(100)
    expected[2:4] = 5.0
    expected[5] = -1.0
    numpy.testing.assert_array_equal(big, expected)
    numpy.testing.assert_array_equal(values, expected[:8])


@pytest.mark.parametrize("settled_threshold", [0, 64])
def test_reads_of_a_deferred_base_including_reinterpreting_views(lazy, settled_threshold):
    lazy.settled_threshold = settled_threshold
    data = numpy.arange(8, dtype=numpy.int64)
    array = snp.array(data.copy())
    numpy.testing.assert_array_equal(array, data)
    numpy.testing.assert_array_equal(array[::-2], data[::-2])
    numpy.testing.assert_array_equal(array.view(numpy.float64), data.view(numpy.float64))
    assert int(array[3]) == 3
    assert array.sum() == data.sum()


def test_releasing_a_deferred_base_records_nothing_and_counts_it(lazy):
    created, released = lazy.stats.bases_created, lazy.stats.bases_released
    for _ in range(5):
        temporary = snp.array(numpy.ones(4))
        del temporary
    gc.collect()
    lazy.settled_threshold = 0  # ones(3) and its sum recorded, not made at once
    snp.ones(3) + 1.0  # records: releases noted so far are taken then
    gc.collect()
    assert lazy.stats.bases_created == created + 7  # the five, ones(3) and its sum
    assert lazy.stats.bases_released >= released + 5
    assert _instructions(lazy).count("release") <= 2


def test_a_loop_that_records_nothing_holds_only_its_live_results(lazy):
    a = snp.array(numpy.linspace(0.0, 1.0, 50))
    b = snp.array(numpy.ones(50))
    for _ in range(2000):
        b[1:-1] = (a[:-2] + a[1:-1] + a[2:]) / 3.0  # NumPy computes every result at once
        a[1:-1] = (b[:-2] + b[1:-1] + b[2:]) / 3.0
    assert not lazy._pending.instructions
    assert len(lazy._deferred) <= 4  # a, b and at most the temporaries of one statement
    expected_a, expected_b = numpy.linspace(0.0, 1.0, 50), numpy.ones(50)
    for _ in range(2000):
        expected_b[1:-1] = (expected_a[:-2] + expected_a[1:-1] + expected_a[2:]) / 3.0
        expected_a[1:-1] = (expected_b[:-2] + expected_b[1:-1] + expected_b[2:]) / 3.0
    numpy.testing.assert_array_equal(a, expected_a)
    numpy.testing.assert_array_equal(b, expected_b)

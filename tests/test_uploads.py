"""Large NumPy operands are uploaded once, and uploaded again whenever their bytes change."""

from __future__ import annotations

import numpy

import shoal.numpy as np
from shoal import runtime


def test_unchanged_numpy_operand_is_uploaded_once() -> None:
    with runtime.configure(engine="reference", eager_threshold=100) as rt:
        real = numpy.arange(1000.0)
        lazy = np.ones(1000)
        first = lazy + real
        created = rt.stats.bases_created
        second = lazy + real
        assert rt.stats.bases_created == created + 1  # the result only
        numpy.testing.assert_array_equal(numpy.asarray(first), numpy.asarray(second))


def test_changed_numpy_operand_is_uploaded_again() -> None:
    with runtime.configure(engine="reference", eager_threshold=100):
        real = numpy.arange(1000.0)
        lazy = np.ones(1000)
        before = lazy * real
        real[0] = 99.0
        real[-1] = -0.0
        after = lazy * real
        assert float(before[0]) == 0.0
        assert float(after[0]) == 99.0
        assert numpy.signbit(numpy.asarray(after)[-1])


def test_nan_payloads_and_negative_zero_count_as_changes() -> None:
    with runtime.configure(engine="reference", eager_threshold=100):
        real = numpy.zeros(1000)
        lazy = np.zeros(1000)
        _ = lazy - real
        real[5] = -0.0
        result = numpy.asarray(lazy - real)
        assert not numpy.signbit(result[5])  # 0.0 - (-0.0) is +0.0; 0.0 - 0.0 is +0.0 too
        assert numpy.asarray(lazy * real).tobytes() == (numpy.zeros(1000) * real).tobytes()

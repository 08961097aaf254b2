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


def test_a_change_past_the_first_compared_chunk_or_in_an_odd_sized_array_is_seen() -> None:
    from shoal.numpy._uploads import COMPARE_CHUNK_WORDS

    with runtime.configure(engine="reference", eager_threshold=100):
        real = numpy.zeros(3 * COMPARE_CHUNK_WORDS + 5)
        lazy = np.zeros(real.size)
        _ = lazy + real
        real[-1] = 7.0  # in the last, partial chunk
        assert float((lazy + real)[-1]) == 7.0
        flags = numpy.zeros(1001, dtype=bool)  # 1001 bytes: compared byte by byte
        lazy_flags = np.zeros(1001, dtype=bool)
        _ = lazy_flags | flags
        flags[1000] = True
        assert bool((lazy_flags | flags)[1000])

"""A base whose data the frontend holds back (a small array made at once, a NumPy array handed
over) is declared and held in the middle of an operation that already took a view of that data
(``cov[i, i:] = cov[i:, i]``: the target first, then the value whose read completes the hold).
The write must reach the memory the component keeps, also where the batch crossed the wire
format (``SHOAL_VERIFY``) or the component is the reference engine: both keep data given away
instead of copying it."""

from __future__ import annotations

import numpy
import pytest

import shoal.numpy as snp
from shoal import held, runtime


def covariance_loop(np, data):
    n, m = data.shape
    centred = data - np.mean(data, axis=0)
    cov = np.zeros((m, m))
    for i in range(m):
        cov[i:, i] = centred[:, i] @ centred[:, i:] / (n - 1)
        cov[i, i:] = cov[i:, i]
    return cov


@pytest.mark.parametrize("verify", ["0", "1"])
@pytest.mark.parametrize("engine", ["node", "reference"])
@pytest.mark.parametrize("hold_run", [2, 5, 16])
def test_a_hold_completed_by_an_operations_value_keeps_its_write(monkeypatch, engine, verify, hold_run):
    monkeypatch.setenv("SHOAL_VERIFY", verify)
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    monkeypatch.setattr(held, "HOLD_RUN", hold_run)
    expected = covariance_loop(numpy, numpy.random.default_rng(4).random((25, 20)))
    with runtime.configure(engine=engine, eager_threshold=0):
        got = numpy.asarray(covariance_loop(snp, snp.random.default_rng(4).random((25, 20))))
    numpy.testing.assert_array_equal(got, expected)


@pytest.mark.parametrize("engine", ["node", "reference"])
def test_data_given_away_is_kept_not_copied(engine):
    """The component keeps a donated array itself: the frontend's views of it stay the memory."""
    from shoal.bytecode import BaseDecl, Batch, View
    from shoal.engine import create

    component = create(engine)
    data = numpy.arange(6.0)
    batch = Batch(bases=[BaseDecl(1, numpy.dtype(numpy.float64), 6)], data={1: data}, donated={1})
    try:
        component.execute(batch)
        component.flush()
        memory = component.memory(View(1, numpy.dtype(numpy.float64), 0, (6,), (8,)), write=True)
        assert memory is not None and numpy.shares_memory(memory, data)
    finally:
        component.shutdown()

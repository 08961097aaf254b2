"""Geometry probes are kept per geometry (``shoal/numpy/_probe.py``): the same geometry gets the
same probe, the cache stays bounded, and no view function of the frontend changes a probe it was
given (a changed probe would give every later view of that geometry wrong offsets or flags)."""

from __future__ import annotations

import numpy as np
import pytest
from numpy_fixtures import AGAINST_NUMPY

import shoal.numpy as snp
from shoal import runtime
from shoal.numpy import _probe

pytestmark = pytest.mark.skipif(AGAINST_NUMPY, reason="tests Shoal's probes")


def test_one_probe_per_geometry_and_a_bounded_cache():
    first = _probe.geometry_probe(np.dtype("f8"), (3, 4), (32, 8))
    assert _probe.geometry_probe(np.dtype("f8"), (3, 4), (32, 8)) is first
    assert _probe.geometry_probe(np.dtype("f4"), (3, 4), (16, 4)) is not first
    for n in range(_probe.PROBES_KEPT + 5):
        _probe.geometry_probe(np.dtype("f8"), (n + 1,), (8,))
    assert len(_probe._PROBES) <= _probe.PROBES_KEPT


def test_view_functions_leave_the_probes_they_use_as_they_were():
    with runtime.configure(engine="node", eager_threshold=0, settled_threshold=0):
        plain = np.arange(24.0).reshape(2, 3, 4)
        lazy = snp.arange(24.0).reshape(2, 3, 4) + 0.0
        assert type(lazy) is snp.ndarray
        probes = [_probe.geometry_probe(lazy.dtype, lazy.shape, lazy.strides)]
        before = [(p.shape, p.strides, p.flags.writeable, p.__array_interface__["data"][0]) for p in probes]
        views = [
            (lambda a: a[:, np.newaxis, 1:, ::-1]),
            (lambda a: a[..., 2]),
            (lambda a: a.T),
            (lambda a: a.reshape(6, 4)),
            (lambda a: a.swapaxes(0, 2)),
            (lambda a: np.moveaxis(a, 0, -1)),
            (lambda a: a.ravel()),
            (lambda a: np.expand_dims(a, 1)),
            (lambda a: np.broadcast_to(a[:, :1], (2, 5, 4))),
            (lambda a: a.diagonal(axis1=1, axis2=2)),
            (lambda a: a[1][::2, 1::2]),
        ]
        for make in views:
            got = make(lazy)
            np.testing.assert_array_equal(np.asarray(got), make(plain))
            again = make(lazy)  # the same geometry again: from the cached probe
            np.testing.assert_array_equal(np.asarray(again), make(plain))
        after = [(p.shape, p.strides, p.flags.writeable, p.__array_interface__["data"][0]) for p in probes]
        assert after == before

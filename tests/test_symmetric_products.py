"""``x @ x.T`` and ``x.T @ x`` as lower-triangle panels and mirror copies
(``shoal/engine/node/schedule/panels.py``): values against the reference engine (NumPy, whose
BLAS call is ``syrk``), an exactly symmetric result as NumPy's, and the work split as planned."""

from __future__ import annotations

import numpy as np
import pytest
from engine_node_harness import node_engine, run_both
from engine_node_recorder import Recorder

import shoal.numpy as snp
from shoal import runtime

RNG = np.random.default_rng(11)


def _symmetric_program(shape: tuple[int, int], dtype: str, transposed_first: bool, sub: bool):
    def program(rec: Recorder):
        x = rec.array(RNG.random(shape).astype(dtype))
        if sub:
            x = rec.index(x, (slice(3, None), slice(1, -2)))
        left, right = (rec.transpose(x), x) if transposed_first else (x, rec.transpose(x))
        out = rec.empty((left.shape[0], left.shape[0]), dtype)
        rec.emit("matmul", (out,), (left, right))
        return [out, rec.ufunc("subtract", out, rec.transpose(out))]

    return program


@pytest.mark.parametrize("dtype", ["float64", "float32"])
@pytest.mark.parametrize(("shape", "transposed_first", "sub"), [((300, 40), False, False), ((129, 7), False, False), ((45, 260), True, False), ((400, 30), False, True)])
def test_symmetric_products_match_numpy_and_are_exactly_symmetric(dtype, shape, transposed_first, sub):
    engine = run_both(_symmetric_program(shape, dtype, transposed_first, sub), block=64, exact=False)
    rows = (shape[1] if transposed_first else shape[0]) - (3 * (not transposed_first) + 3 * transposed_first if sub else 0)
    panels = max(1, min(8, rows // 64))
    assert engine.last_stats.product_panels == 2 * panels - 1  # lower-triangle panels and the mirrors above them


def test_the_lower_triangle_alone_is_computed_and_the_upper_is_its_mirror():
    rec = Recorder()
    x = RNG.random((256, 16))
    view = rec.array(x)
    out = rec.empty((256, 256), "float64")
    rec.emit("matmul", (out,), (view, rec.transpose(view)))
    engine = node_engine(block=64)
    try:
        engine.execute(rec.new_batch())
        result = engine.fetch(out)
    finally:
        engine.shutdown()
    assert (result == result.T).all()
    np.testing.assert_allclose(result, x @ x.T, rtol=1e-12)


def test_products_of_a_view_and_another_views_transpose_are_not_mirrored():
    """``x[:, :-1] @ x[:, 1:].T`` shares a base but is not symmetric: full panels."""
    def program(rec: Recorder):
        x = rec.array(RNG.random((200, 30)))
        left, right = rec.index(x, (slice(None), slice(None, -1))), rec.transpose(rec.index(x, (slice(None), slice(1, None))))
        out = rec.empty((200, 200), "float64")
        rec.emit("matmul", (out,), (left, right))
        return [out]

    engine = run_both(program, block=64, exact=False)
    assert engine.last_stats.product_panels == 4  # 200 rows in panels of 64, no mirror


def test_gram_matrices_through_the_frontend_equal_numpys(monkeypatch):
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    monkeypatch.setenv("SHOAL_DIRECT_WORK", "0")
    monkeypatch.setenv("SHOAL_NUM_THREADS", "2")
    data = RNG.random((700, 90))
    with runtime.configure(engine="node", eager_threshold=0, settled_threshold=0):
        x = snp.asarray(data) * 1.0
        gram, covariance = x @ x.T, x.T @ x
        ours = np.asarray(gram), np.asarray(covariance)
    for got, expected in zip(ours, (data @ data.T, data.T @ data)):
        np.testing.assert_allclose(got, expected, rtol=1e-12)
        assert (got == got.T).all()

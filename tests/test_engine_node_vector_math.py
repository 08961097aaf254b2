"""The compiled kernels' own exp, log and reorderable sums against NumPy, and that they vectorise."""

from __future__ import annotations

import numpy as np
import pytest
from engine_node_harness import run_both
from engine_node_recorder import Recorder

pytest.importorskip("numba")
pytestmark = pytest.mark.full

import numba  # noqa: E402

from shoal.engine.node.codegen import vector_math as vm  # noqa: E402
from shoal.engine.node.codegen.kernel_source import generate  # noqa: E402
from shoal.engine.node.compile.worker import load_and_warm  # noqa: E402
from shoal.engine.node.lower.program import lower  # noqa: E402
from shoal.engine.node.plan.plan import Group, plan_batch  # noqa: E402

SPECIAL = np.array([
    np.nan, -np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 5e-324, -5e-324, 2.2250738585072014e-308,
    1.7976931348623157e308, 1.0 + 2**-52, 1.0 - 2**-53, 709.782712893384, 709.7827128933841,
    -745.1332191019411, -745.1332191019412, -708.3964185322641, -708.4, 0.5, 2.0, 1e-300, -1e-300,
])  # fmt: skip


@numba.njit(error_model="numpy")
def _exp_all(values, out):
    for i in range(values.size):
        out[i] = vm.exp(values[i])


@numba.njit(error_model="numpy")
def _log_all(values, out):
    for i in range(values.size):
        out[i] = vm.log(values[i])


@numba.njit(error_model="numpy")
def _sum_all(values):
    total = 0.0
    for i in range(values.size):
        total = vm.reassoc_add(total, values[i])
    return total


def _samples(rng: np.random.Generator) -> list[np.ndarray]:
    return [
        rng.uniform(-5, 5, 20000),
        rng.uniform(-750, 750, 20000),
        rng.uniform(700, 710, 2000),
        rng.uniform(-746, -700, 2000),  # subnormal results
        10.0 ** rng.uniform(-320, 308, 20000),  # subnormal to huge arguments of log
        rng.uniform(0.999, 1.001, 20000),  # log near 1
        SPECIAL,
    ]


@pytest.mark.parametrize(("ours", "reference"), [(_exp_all, np.exp), (_log_all, np.log)])
def test_within_one_ulp_of_numpy_with_the_same_specials(ours, reference):
    rng = np.random.default_rng(7)
    for values in _samples(rng):
        got = np.empty_like(values)
        ours(values, got)
        with np.errstate(all="ignore"):
            expected = reference(values)
        finite = np.isfinite(expected)
        np.testing.assert_array_equal(got[~finite], expected[~finite])  # inf, -inf, nan alike
        assert np.all(np.isfinite(got[finite]))
        ulps = np.abs(got[finite] - expected[finite]) / np.spacing(np.abs(expected[finite]))
        assert ulps.max(initial=0) <= 1.0


def test_float32_arguments_round_to_numpys_float32_results():
    values = np.random.default_rng(3).uniform(-100, 90, 5000).astype(np.float32)
    got = np.empty(values.size, np.float32)
    _exp_all(values, got)
    with np.errstate(over="ignore"):
        np.testing.assert_allclose(got, np.exp(values), rtol=2e-6)


def test_reorderable_sum_rounds_like_numpy_and_keeps_nan_and_infinity():
    values = np.random.default_rng(5).normal(size=100_003)
    assert _sum_all(values) == pytest.approx(float(np.sum(values)), rel=1e-12, abs=1e-12)
    values[77] = np.inf
    assert _sum_all(values) == np.inf
    values[5] = np.nan
    assert np.isnan(_sum_all(values))


@pytest.fixture(autouse=True)
def kernel_cache(tmp_path_factory, monkeypatch):
    monkeypatch.setenv("SHOAL_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "shoal-kernels"))


def test_a_fused_kernel_with_exp_log_and_sums_vectorises(tmp_path):
    """The point of these functions: LLVM emits vector instructions for the whole fused loop."""
    rec = Recorder()
    x = rec.array(np.linspace(0.5, 2.0, 4096))
    y = rec.ufunc("exp", rec.ufunc("multiply", rec.ufunc("log", x), -0.5))
    rec.reduce("sum", y)
    source = _kernel_source(rec)
    path = tmp_path / "vector_probe.py"
    path.write_text(source.replace("cache=True, ", ""))
    module = load_and_warm(path)
    llvm = "\n".join(module.vector_probe.inspect_llvm().values())
    assert "vm.exp" in source and "vm.log" in source and "vm.reassoc_add" in source
    assert "x double>" in llvm  # vector types: the loop was vectorised


def _kernel_source(rec: Recorder) -> str:
    batch = rec.new_batch()
    plan = plan_batch(batch, {decl.id: decl for decl in batch.bases})
    group = next(step for step in plan.steps if isinstance(step, Group))
    return generate(lower(group, plan.temporaries, 1024), "vector_probe")


def test_exp_log_and_sum_kernels_match_the_reference_engine():
    def program(rec: Recorder):
        x = rec.array(np.concatenate([np.linspace(-800, 800, 3001), SPECIAL]))
        e = rec.ufunc("exp", x)
        g = rec.ufunc("log", x)
        total = rec.reduce("sum", rec.ufunc("multiply", rec.ufunc("exp", rec.ufunc("multiply", x, 0.01)), 2.0))
        f = rec.array(np.linspace(-90, 90, 1000, dtype=np.float32))
        return [e, g, total, rec.ufunc("exp", f), rec.ufunc("log", f)]

    engine = run_both(program, block=512, compile="sync", exact=False)
    assert engine.compile_errors == []
    assert engine.last_stats.compiled_block_ops > 0

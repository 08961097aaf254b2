"""Which line a floating-point warning names when a fused kernel overwrote an input in place.

When a block's gate fires, the engine recomputes the block's steps with NumPy to find the ones
NumPy would blame. A step whose input the kernel overwrote in place (``np.log(a, out=a)``, a
stencil sweep storing its own rows, several sweeps per pass) cannot be recomputed from base
memory. These programs put two such steps (or one such step and a recomputable one) able to
meet the same condition in one kernel, and compare the warnings shown (category, message, file,
line) with NumPy's: on the NumPy tile path in view-blocks, and with compiled kernels.

Every input comes from an earlier batch (``settled``), so the kernel cannot recompute it from
the fill that made it.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from fp_engines import blocked_engine, count_compiled
from numpy_fixtures import needs_runtime

N = 1 << 12


def settled(array: Any) -> Any:
    """``array`` computed in a batch of its own (reading an element runs it)."""
    float(array[(0,) * array.ndim])
    return array


def quiet_log_then_signalling_log(xp: ModuleType) -> Any:
    a, b = settled(xp.full(N, 2.0)), settled(xp.zeros(N))
    xp.log(a, out=a)  # quiet
    xp.log(b, out=b)  # signals
    return a + b


def signalling_log_then_quiet_log(xp: ModuleType) -> Any:
    a, b = settled(xp.zeros(N)), settled(xp.full(N, 2.0))
    xp.log(a, out=a)  # signals
    xp.log(b, out=b)  # quiet
    return a + b


def recomputed_and_in_place_both_signal(xp: ModuleType) -> Any:
    x, a = settled(xp.zeros(N)), settled(xp.zeros(N))
    y = xp.log(x)  # signals, recomputable
    xp.log(a, out=a)  # signals, overwritten
    return y + a


def in_place_quiet_recomputed_signals(xp: ModuleType) -> Any:
    x, a = settled(xp.zeros(N)), settled(xp.full(N, 2.0))
    y = xp.log(x)  # signals, recomputable
    xp.log(a, out=a)  # quiet, overwritten
    return y + a


def quiet_division_then_signalling_division(xp: ModuleType) -> Any:
    a, b = settled(xp.ones(N)), settled(xp.ones(N))
    b[N // 2] = 0.0
    settled(b)
    xp.divide(1.0, a, out=a)  # quiet
    xp.divide(1.0, b, out=b)  # signals
    return a - b


def in_place_update_then_square_root(xp: ModuleType) -> Any:
    """``a = a * 0.5 + b * c`` in place, then a square root of the result: only the root is
    invalid (``a`` holds -1), the update meets nothing."""
    a, b, c = settled(xp.full(N, -4.0)), settled(xp.ones(N)), settled(xp.ones(N))
    a *= 0.5  # quiet
    a += b * c  # quiet
    return xp.sqrt(a)  # signals


def overflow_in_one_of_two_updates(xp: ModuleType) -> Any:
    a, b = settled(xp.full(N, 1e300)), settled(xp.full(N, 1e300))
    a *= 10.0  # quiet
    b *= 1e10  # signals
    return a + b


def sweeps_later_one_overflows(xp: ModuleType) -> Any:
    """Three stencil sweeps on three lines: the second overflows, the first and third do not."""
    grid = settled(xp.full((64, 64), 0.6e308))
    grid[1:-1, 1:-1] = grid[:-2, 1:-1] + grid[2:, 1:-1]  # quiet
    grid[1:-1, 1:-1] = grid[:-2, 1:-1] + grid[2:, 1:-1]  # signals
    grid[1:-1, 1:-1] = grid[:-2, 1:-1] + grid[2:, 1:-1]  # quiet (inf + x is exact)
    return grid


def sweeps_first_one_divides(xp: ModuleType) -> Any:
    """Three sweeps: the first divides by zero; what it leaves makes the later ones quiet."""
    grid = xp.ones((64, 64))
    grid[2] = 0.0
    settled(grid)
    grid[1:-1, 1:-1] = grid[:-2, 1:-1] / grid[2:, 1:-1]  # signals
    grid[1:-1, 1:-1] = grid[:-2, 1:-1] / grid[2:, 1:-1]  # quiet
    grid[1:-1, 1:-1] = grid[:-2, 1:-1] / grid[2:, 1:-1]  # quiet
    return grid


def stencil_and_aliased_output(xp: ModuleType) -> Any:
    """A sweep storing its own rows beside an ``out=`` aliasing its input: the sweep is quiet,
    the aliased logarithm divides by zero."""
    grid, a = settled(xp.full((64, 64), 2.0)), settled(xp.zeros((64, 64)))
    grid[1:-1, 1:-1] = xp.log(grid[:-2, 1:-1] * grid[2:, 1:-1])  # quiet
    xp.log(a, out=a)  # signals
    return grid + a


CASES = [
    quiet_log_then_signalling_log, signalling_log_then_quiet_log, recomputed_and_in_place_both_signal,
    in_place_quiet_recomputed_signals, quiet_division_then_signalling_division,
    in_place_update_then_square_root, overflow_in_one_of_two_updates, sweeps_later_one_overflows,
    sweeps_first_one_divides, stencil_and_aliased_output,
]  # fmt: skip


def shown(case: Callable[[ModuleType], Any], xp: ModuleType) -> list[tuple[Any, ...]]:
    """(category, message, file, line) of each warning ``case`` makes, its result read."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        np.asarray(case(xp))
    return [(w.category, str(w.message), w.filename, w.lineno) for w in caught]


def test_the_cases_warn_under_numpy() -> None:
    for case in CASES:
        assert shown(case, np), case.__name__


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.__name__)
def test_numpy_tiles_blame_as_numpy(case: Callable[[ModuleType], Any]) -> None:
    needs_runtime()
    import shoal.numpy as snp
    from shoal import runtime

    expected = shown(case, np)
    engine = blocked_engine("off")
    with runtime.configure(engine=engine, eager_threshold=0, settled_threshold=0):
        assert shown(case, snp) == expected


# Compiled kernels report status flags for the whole kernel, not per step; where a step's input
# was overwritten, the flags cannot be traced to it (see docs/decisions.md, "Floating-point
# blame for inputs overwritten in place").
COMPILED_INEXACT = {
    quiet_log_then_signalling_log, recomputed_and_in_place_both_signal,
    quiet_division_then_signalling_division, in_place_update_then_square_root,
    overflow_in_one_of_two_updates, sweeps_later_one_overflows,
}  # fmt: skip
COMPILED_CASES = [
    pytest.param(case, marks=pytest.mark.xfail(strict=True, reason="flags of a kernel that overwrote an input"))
    if case in COMPILED_INEXACT else case
    for case in CASES
]  # fmt: skip


@pytest.mark.full
@pytest.mark.timeout(300)
@pytest.mark.parametrize("case", COMPILED_CASES, ids=lambda case: case.__name__)
def test_compiled_kernels_blame_as_numpy(case: Callable[[ModuleType], Any]) -> None:
    needs_runtime()
    import shoal.numpy as snp
    from shoal import runtime

    expected = shown(case, np)
    engine = blocked_engine("sync")
    compiled = count_compiled(engine)
    with runtime.configure(engine=engine, eager_threshold=0, settled_threshold=0):
        assert shown(case, snp) == expected  # compiles
        compiled.clear()
        assert shown(case, snp) == expected  # runs compiled
    assert sum(compiled) > 0


@pytest.mark.full
@pytest.mark.parametrize("name", ["exp", "log"])
def test_compiled_exp_and_log_raise_numpys_conditions_per_value(name: str) -> None:
    """A kernel's flags are all a step whose input was overwritten can be blamed by: the
    compiled ``exp`` and ``log`` raise, value by value, exactly the conditions NumPy reports.
    Not among the values: the false alarms ``vector_math`` keeps for speed (NaN, ``exp`` of
    ±infinity or of arguments below 2**-500 in magnitude, ``log`` beyond ±2**970) and an ``exp``
    whose subnormal result NumPy rounds and this one may hit exactly (an underflow NumPy
    reports and this one not)."""
    pytest.importorskip("numba")
    import numba

    from shoal.engine.fp_signals import (
        CATEGORY_TEXT,
        DIVIDE,
        INVALID,
        OVER,
        UNDER,
        NumpyLog,
        category,
    )
    from shoal.engine.node.codegen import vector_math as vm
    from shoal.engine.node.run import fp_flags

    if fp_flags._FENV is None:
        pytest.skip("no fetestexcept in this C library")
    function = getattr(vm, name)

    @numba.njit(error_model="numpy")
    def one(values: np.ndarray, out: np.ndarray) -> None:
        for i in range(values.size):
            out[i] = function(values[i])

    values = [0.0, -0.0, 1.0, -1.0, -2.0, -0.5, 0.5, 2.0, 1e-10, -1e-10, 1e290, -1e290]
    if name == "exp":
        values += [709.782712893384, 709.7827128933841, 1000.0, -745.1332191019411, -745.1332191019412, -1000.0]
    else:
        values += [-5e-324, 5e-324, 2.2250738585072014e-308, 1e-300, -1e-300]
    everything = DIVIDE | OVER | UNDER | INVALID
    one(np.ones(1), np.empty(1))  # compiled before any flag is read
    for value in values:
        log = NumpyLog()
        with np.errstate(all="log", call=log):
            getattr(np, name)(np.array([value]))
        expected = 0
        for message in log.messages:
            expected |= category(message)
        fp_flags._hardware(everything)
        one(np.array([value]), np.empty(1))
        raised = fp_flags._hardware(everything)
        names = [CATEGORY_TEXT[bit] for bit in (DIVIDE, OVER, UNDER, INVALID) if raised & bit]
        assert raised == expected, (name, value, names)


def shrinking_sweeps(xp: ModuleType) -> Any:
    """Four sweeps, each writing one row fewer at the top, quiet under NumPy: each copies
    ``-0.9e308`` one row down. Row 1, which only the first sweep writes, would overflow if the
    second computed it anyway (``-0.9e308 - 0.9e308``), as a rank computing its halo rows must not."""
    grid = xp.zeros((64, 64))
    grid[0] = -0.9e308
    settled(grid)
    for sweep in range(4):
        grid[1 + sweep : -1, 1:-1] = grid[1 + sweep : -1, 1:-1] + grid[sweep:-2, 1:-1]
    return grid


@pytest.mark.full
@pytest.mark.timeout(300)
def test_a_pass_of_shrinking_sweeps_computes_only_the_rows_each_writes() -> None:
    needs_runtime()
    import shoal.numpy as snp
    from shoal import runtime

    assert shown(shrinking_sweeps, np) == []
    engine = blocked_engine("sync")
    with runtime.configure(engine=engine, eager_threshold=0, settled_threshold=0):
        assert shown(shrinking_sweeps, snp) == []
        assert engine.last_stats.sweep_passes == 1
        np.testing.assert_array_equal(np.asarray(shrinking_sweeps(snp)), shrinking_sweeps(np))

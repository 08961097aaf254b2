"""NumPy's floating-point ``RuntimeWarning`` for lazy operations, against NumPy.

Each category (divide, over, invalid, under) under each mode (the default ``"warn"``,
``np.seterr``, ``np.errstate`` around the recording only, ``"ignore"``, ``"raise"``) and each
warnings filter (``default``, ``always``, ``once``, ``ignore``, ``error``): the warnings shown
(category, message, file, line, how many) and the exceptions caught (type, message, line) are
NumPy's. ``fp_warning_program.py`` runs as a program (arrays of 2**19 elements, lazy at the
default threshold); the in-process cases run on every engine with every array lazy, fused
kernels holding several operations where only one signals among them.
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from fp_engines import blocked_engine, count_compiled
from numpy_fixtures import needs_runtime

PROGRAM = Path(__file__).resolve().parent / "fp_warning_program.py"
N = 1 << 12

QUICK_RUNS = [("default", "default"), ("default", "always"), ("default", "error"), ("errstate-invalid-ignore", "default")]
MODES = [
    "default", "seterr-all-warn", "seterr-divide-ignore", "seterr-under-warn", "seterr-over-raise",
    "errstate-all-ignore", "errstate-invalid-ignore", "errstate-under-warn", "errstate-all-raise",
]  # fmt: skip
FILTERS = ["default", "always", "once", "ignore", "error"]


def program_lines(mode: str, action: str, *, shoal: bool, compile: str = "off") -> list[str]:
    """The warning and exception lines ``fp_warning_program.py`` prints."""
    prefix = [sys.executable, "-m", "shoal"] if shoal else [sys.executable]
    environment = {key: value for key, value in os.environ.items() if not key.startswith("SHOAL_")}
    environment.update(SHOAL_VERIFY="1", SHOAL_COMPILE=compile)
    result = subprocess.run([*prefix, str(PROGRAM), mode, action], env=environment, capture_output=True, text=True, timeout=100)
    assert result.returncode == 0, result.stderr[-4000:]
    return [line for line in result.stdout.splitlines() if line[:2] in ("W ", "E ", "ch")]


def assert_program_matches(mode: str, action: str, compile: str = "off") -> None:
    expected = program_lines(mode, action, shoal=False)
    assert any(line.startswith(("W ", "E ")) for line in expected) or action == "ignore" or mode == "errstate-all-ignore"
    assert program_lines(mode, action, shoal=True, compile=compile) == expected


@pytest.mark.parametrize(("mode", "action"), QUICK_RUNS)
def test_program_warns_as_numpy(mode: str, action: str) -> None:
    assert_program_matches(mode, action)


@pytest.mark.full
@pytest.mark.parametrize(("mode", "action"), [(mode, action) for mode in MODES for action in FILTERS if (mode, action) not in QUICK_RUNS])
def test_program_warns_as_numpy_in_every_mode(mode: str, action: str) -> None:
    assert_program_matches(mode, action)


@pytest.mark.full
@pytest.mark.timeout(300)
@pytest.mark.parametrize("action", ["default", "always"])
def test_program_with_compiled_kernels_warns_as_numpy(action: str) -> None:
    assert_program_matches("seterr-all-warn", action, compile="sync")


# ---------------------------------------------------------------- in-process cases


def log_and_divide(xp: ModuleType) -> Any:
    ones = xp.ones(N)
    return xp.log(ones * 2.0) + ones / xp.zeros(N)  # signals


def divide_and_log(xp: ModuleType) -> Any:
    ones = xp.ones(N)
    return ones / (ones + 1.0) - xp.log(xp.zeros(N))  # signals


def two_divisions_one_signals(xp: ModuleType) -> Any:
    a, b = xp.ones(N), xp.zeros(N)
    return (a / (a + 1.0)) * (a / b)  # signals


def overflow_then_invalid(xp: ModuleType) -> Any:
    big = xp.full(N, 1e300)
    return big * big - big * big  # signals


def in_place_log(xp: ModuleType) -> Any:
    a = xp.zeros(N)
    xp.log(a, out=a)  # signals
    return a


def in_place_divide_then_add(xp: ModuleType) -> Any:
    a = xp.zeros(N)
    a /= 0.0  # signals
    a += 1.0
    return a


def stencil_in_place(xp: ModuleType) -> Any:
    grid = xp.zeros((64, 64))
    grid[1:-1, 1:-1] = 0.25 * (grid[:-2, 1:-1] / grid[2:, 1:-1] + grid[1:-1, :-2])  # signals
    return grid


def underflow(xp: ModuleType) -> Any:
    with xp.errstate(under="warn"):
        tiny = xp.full(N, 1e-300)
        result = tiny * tiny  # signals
    return result


def integer_division(xp: ModuleType) -> Any:
    a = xp.arange(N)
    return a // (a - a) + a % (a * 0)  # signals


def casts(xp: ModuleType) -> Any:
    values = xp.linspace(-1e300, 1e300, N)
    return values.astype(xp.float32).astype(xp.int32)  # signals


def filled_and_assigned(xp: ModuleType) -> Any:
    small = xp.zeros(N, xp.float32)
    small[::2] = xp.full(N // 2, 1e300)  # signals
    small.fill(1e300)  # signals
    whole = xp.zeros(N, xp.int64)
    whole[xp.arange(0, N, 2)] = xp.full(N // 2, xp.nan)  # signals
    return small, whole


def reductions(xp: ModuleType) -> Any:
    return xp.add.reduce(xp.full(N, 1e305)) + xp.cumsum(xp.full(N, 1e305))  # signals


def complex_orderings(xp: ModuleType) -> Any:
    """Ordering comparisons of complex numbers report NaNs (those of floats do not), and the
    sign of a complex number overflows with its magnitude; three times, as later calls of a
    line are recorded from what the first ones found."""
    real = xp.linspace(-1.0, 1.0, N)
    real[::7] = xp.nan
    z = real + 0.5j
    near_limit = (real * 3e38 + real * 3e38j).astype(xp.complex64)
    results = [xp.sign(near_limit), xp.sign(real)]  # signals
    for _ in range(3):
        results.append(z < 1j)  # signals
        results.append(real >= 0.5j)  # signals
        results.append(xp.greater_equal(real, xp.complex64(0.5)))  # signals
        results.append((z <= z[::-1]) | (real > 0.0) | (real <= xp.float32(1.0)))  # signals
    return tuple(results)


def quiet(xp: ModuleType) -> Any:
    a = xp.linspace(1.0, 2.0, N)
    return xp.sqrt(xp.log(a) + 1.0) / a


def false_alarms(xp: ModuleType) -> Any:
    """Values whose status flags a compiled kernel raises where NumPy reports nothing."""
    a = xp.full(N, xp.nan)
    return xp.log(a) + xp.exp(a * 0.0 + xp.inf) + xp.sqrt(a)


def ignored_at_recording(xp: ModuleType) -> Any:
    with xp.errstate(divide="ignore"):
        result = xp.log(xp.zeros(N))
    return result + 1.0


CASES = [
    log_and_divide, divide_and_log, two_divisions_one_signals, overflow_then_invalid, in_place_log,
    in_place_divide_then_add, stencil_in_place, underflow, integer_division, casts,
    filled_and_assigned, reductions, complex_orderings,
    quiet, false_alarms, ignored_at_recording,
]  # fmt: skip
QUIET = (quiet, false_alarms, ignored_at_recording)


# Integer division has no compiled form (NumPy tiles run it); casts run as copy chains.
NOT_COMPILED = (integer_division, casts, filled_and_assigned)


def shown(case: Callable[[ModuleType], Any], xp: ModuleType, action: str = "always") -> list[tuple[Any, ...]]:
    """(category, message, file, line) of each warning ``case`` makes, its result read."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter(action)
        result = case(xp)
        for array in result if isinstance(result, tuple) else (result,):
            np.asarray(array)
    return [(w.category, str(w.message), w.filename, w.lineno) for w in caught]


@pytest.fixture
def fresh_registry() -> Iterator[None]:
    """This module's ``__warningregistry__`` emptied before and after (``default`` counts)."""
    globals().pop("__warningregistry__", None)
    yield
    globals().pop("__warningregistry__", None)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.__name__)
def test_lazy_operations_warn_as_numpy(snp: ModuleType, case: Callable[[ModuleType], Any]) -> None:
    expected = shown(case, np)
    assert shown(case, snp) == expected
    assert bool(expected) == (case not in QUIET)


def test_once_per_line_under_the_default_filter(snp: ModuleType, fresh_registry: None) -> None:
    def repeated(xp: ModuleType) -> Any:
        total = xp.zeros(N)
        for _ in range(3):
            total = total + xp.ones(N) / xp.zeros(N)  # signals
            float(total[0])  # each iteration runs in a batch of its own
        return total

    expected = shown(repeated, np, "default")
    globals().pop("__warningregistry__", None)
    assert shown(repeated, snp, "default") == expected
    assert len(expected) == 1
    assert len(shown(repeated, snp, "always")) == 3


def test_an_error_filter_raises_at_the_recording_line(snp: ModuleType) -> None:
    needs_runtime()
    lines = []
    for xp in (np, snp):
        with warnings.catch_warnings():
            warnings.simplefilter("error", RuntimeWarning)
            ones = xp.ones(N)
            with pytest.raises(RuntimeWarning, match="divide by zero encountered in divide") as raised:
                ones / xp.zeros(N)  # signals
            lines.append(raised.traceback[0].lineno)
    assert lines[0] == lines[1]


def test_seterrcall_and_raise_still_win_over_warn(snp: ModuleType) -> None:
    with np.errstate(divide="raise"), pytest.raises(FloatingPointError, match="divide by zero encountered in log"):
        snp.log(snp.zeros(N))  # signals


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.__name__)
def test_numpy_tiles_in_blocks_warn_as_numpy(case: Callable[[ModuleType], Any]) -> None:
    needs_runtime()
    import shoal.numpy as snp
    from shoal import runtime

    expected = shown(case, np)
    engine = blocked_engine("off")
    with runtime.configure(engine=engine, eager_threshold=0, settled_threshold=0):
        assert shown(case, snp) == expected
        assert not engine.last_stats.direct


@pytest.mark.full
@pytest.mark.timeout(300)
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.__name__)
def test_compiled_kernels_warn_as_numpy(case: Callable[[ModuleType], Any]) -> None:
    import shoal.numpy as snp
    from shoal import runtime

    expected = shown(case, np)
    engine = blocked_engine("sync")
    compiled = count_compiled(engine)
    with runtime.configure(engine=engine, eager_threshold=0, settled_threshold=0):
        assert shown(case, snp) == expected  # compiles
        compiled.clear()
        assert shown(case, snp) == expected  # runs compiled
    assert sum(compiled) > 0 or case in NOT_COMPILED

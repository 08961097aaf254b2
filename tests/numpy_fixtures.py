"""Fixtures and helpers for the differential tests of ``shoal.numpy`` against NumPy.

The contract of ``shoal.numpy`` is "the same as NumPy": every test here runs one operation
through NumPy and through Shoal on equal copies of the same inputs and demands the same dtype,
shape and values, or the same exception type raised by the call itself.

``SHOAL_TESTS_AGAINST_NUMPY=1`` puts NumPy on both sides. It checks the tests themselves (a
differential test that fails with NumPy on both sides is a wrong test); tests that need the
Shoal runtime skip in that mode.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import Any

import hypothesis.extra.numpy as hnp
import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

AGAINST_NUMPY = os.environ.get("SHOAL_TESTS_AGAINST_NUMPY", "") not in ("", "0")

# Small batches so that the size threshold triggers flushes inside ordinary tests.
SMALL_FLUSH_THRESHOLD = 64
# Larger than any array in these tests: every array stays a plain NumPy array.
EAGER_EVERYTHING = 1 << 40

ALL_DTYPES = tuple(
    np.dtype(name)
    for name in (
        "bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
        "float32", "float64", "complex64", "complex128",
    )
)  # fmt: skip
INTEGER_DTYPES = tuple(d for d in ALL_DTYPES if d.kind in "iu")
FLOAT_DTYPES = tuple(d for d in ALL_DTYPES if d.kind == "f")
INEXACT_DTYPES = tuple(d for d in ALL_DTYPES if d.kind in "fc")
NUMERIC_DTYPES = tuple(d for d in ALL_DTYPES if d.kind != "b")

DIFFERENTIAL = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)


@dataclass(frozen=True)
class Mode:
    """How the Shoal side of a test runs: which engine, and whether small arrays stay lazy."""

    engine: str  # a component stack, e.g. ``node`` or ``pass:node``
    lazy: bool

    @property
    def label(self) -> str:
        return f"{self.engine}-{'lazy' if self.lazy else 'eager'}"

    @property
    def stacked(self) -> bool:
        """True if a middle component runs above the engine."""
        return ":" in self.engine


def engine_names() -> list[str]:
    """The engines the lazy tests run on: the reference engine, plus the node engine if built."""
    if AGAINST_NUMPY:
        return ["reference"]
    import shoal.engine

    return [name for name in ("reference", "node") if name in shoal.engine.names()]


def stacked_names() -> list[str]:
    """The same engines below the pass-through component (``pass:node``, ``pass:reference``):
    stacking must change nothing (``conftest.py`` puts most of these runs in the full tier)."""
    return [] if AGAINST_NUMPY else [f"pass:{name}" for name in engine_names()]


LAZY_MODES = [Mode(name, lazy=True) for name in [*engine_names(), *stacked_names()]]
ALL_MODES = [*LAZY_MODES, Mode("reference", lazy=False)]


@contextlib.contextmanager
def shoal_numpy(mode: Mode, flush_threshold: int = SMALL_FLUSH_THRESHOLD, settled_threshold: int | None = None) -> Iterator[ModuleType]:
    """``shoal.numpy`` running under a fresh runtime configured for ``mode`` (``settled_threshold``
    0: small views of settled bases are recorded like any other, see ``shoal/numpy/_settled.py``)."""
    if AGAINST_NUMPY:
        yield np
        return
    runtime = importlib.import_module("shoal.runtime")
    module = importlib.import_module("shoal.numpy")
    eager_threshold = 0 if mode.lazy else EAGER_EVERYTHING
    with runtime.configure(
        engine=mode.engine, eager_threshold=eager_threshold, flush_threshold=flush_threshold, settled_threshold=settled_threshold
    ):
        yield module


@pytest.fixture(params=LAZY_MODES, ids=lambda mode: mode.label)
def snp(request: pytest.FixtureRequest) -> Iterator[ModuleType]:
    """``shoal.numpy`` with every array lazy, once per available engine."""
    with shoal_numpy(request.param) as module:
        yield module


@pytest.fixture(params=LAZY_MODES, ids=lambda mode: mode.label)
def snp_recorded(request: pytest.FixtureRequest) -> Iterator[ModuleType]:
    """Like ``snp``, with no small view computed at once by NumPy (``settled_threshold`` 0): a
    function of lazy arrays takes its recorded path."""
    with shoal_numpy(request.param, settled_threshold=0) as module:
        yield module


@pytest.fixture(params=ALL_MODES, ids=lambda mode: mode.label)
def snp_any(request: pytest.FixtureRequest) -> Iterator[ModuleType]:
    """Like ``snp``, plus one run where every array is small enough to stay plain NumPy."""
    with shoal_numpy(request.param) as module:
        yield module


@pytest.fixture
def snp_default() -> Iterator[ModuleType]:
    """``shoal.numpy`` under a node-engine runtime at default settings, as ``python -m shoal``
    runs it: arrays from 2^19 elements lazy, smaller ones NumPy's."""
    if AGAINST_NUMPY:
        yield np
        return
    runtime = importlib.import_module("shoal.runtime")
    with runtime.configure(engine="node"):
        yield importlib.import_module("shoal.numpy")


def needs_runtime() -> None:
    """Skip the calling test when NumPy stands on both sides (no runtime to inspect)."""
    if AGAINST_NUMPY:
        pytest.skip("inspects the Shoal runtime")


def flush_count() -> int:
    """How many batches the current runtime has flushed so far."""
    import shoal.runtime

    return shoal.runtime.current().stats.flushes


# ---------------------------------------------------------------- comparing results


def default_rtol(dtype: np.dtype) -> float:
    """Relative tolerance for results of ``dtype``: a few ulps of room for other kernels."""
    if dtype in (np.dtype("float32"), np.dtype("complex64")):
        return 1e-5
    return 1e-12


def assert_same(
    actual: Any, expected: Any, *, rtol: float | None = None, atol: float = 0.0
) -> None:
    """``actual`` (from Shoal) equals ``expected`` (from NumPy): type of value, dtype, shape, values.

    Integers and booleans compare exactly; floating results within ``rtol`` (by default a few
    ulps of their dtype) and ``atol``, with NaN and infinities in the same places. A NumPy scalar
    may come back from Shoal as a 0-d array of the same dtype.
    """
    if isinstance(expected, tuple | list) and not isinstance(expected, np.ndarray):
        assert isinstance(actual, tuple | list), f"expected a sequence, got {type(actual)}"
        assert len(actual) == len(expected)
        for actual_item, expected_item in zip(actual, expected):
            assert_same(actual_item, expected_item, rtol=rtol, atol=atol)
        return
    if isinstance(expected, bool | int | float | complex) and not isinstance(expected, np.generic):
        assert type(actual) is type(expected), f"{type(actual)} is not {type(expected)}"
        if isinstance(expected, float | complex) and expected != expected:
            assert actual != actual
        else:
            assert actual == expected or np.isclose(actual, expected, rtol=rtol or 1e-12, atol=atol)
        return
    assert isinstance(expected, np.ndarray | np.generic), f"cannot compare with {type(expected)}"
    assert actual.dtype == expected.dtype, f"dtype {actual.dtype} != {expected.dtype}"
    assert tuple(actual.shape) == expected.shape, f"shape {actual.shape} != {expected.shape}"
    if isinstance(expected, np.ndarray) and expected.ndim > 0:
        assert not isinstance(actual, np.generic), "a scalar came back where NumPy gives an array"
    values = np.asarray(actual)
    assert type(values) is np.ndarray
    assert values.dtype == expected.dtype
    if expected.dtype.kind in "fc":
        np.testing.assert_allclose(
            values,
            expected,
            rtol=default_rtol(expected.dtype) if rtol is None else rtol,
            atol=atol,
            equal_nan=True,
            strict=True,
        )
    else:
        np.testing.assert_array_equal(values, expected, strict=True)


@contextlib.contextmanager
def quiet_floating_point() -> Iterator[None]:
    """Silence NumPy's floating-point RuntimeWarnings (both sides compute the same values)."""
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def to_shoal(snp: ModuleType, value: Any) -> Any:
    """A Shoal copy of ``value`` if it is an ndarray; anything else passes through unchanged."""
    if isinstance(value, np.ndarray):
        return snp.array(value, copy=True)
    return value


def duplicate(value: Any) -> Any:
    """An independent copy of ``value`` if it is an ndarray."""
    return value.copy() if isinstance(value, np.ndarray) else value


def outcome(call: Callable[[], Any]) -> tuple[Any, Exception | None]:
    """``(result, None)`` or ``(None, exception)`` of ``call()``."""
    try:
        return call(), None
    except Exception as error:
        return None, error


def check_same(
    snp: ModuleType,
    operation: Callable[..., Any],
    *inputs: Any,
    rtol: float | None = None,
    atol: float = 0.0,
) -> Any:
    """Run ``operation(xp, *inputs)`` with ``xp`` NumPy and Shoal; both must agree.

    NumPy works on copies of ``inputs``; Shoal on Shoal copies of them. Either both return the
    same result and leave their inputs equal (so in-place operations and writes through views are
    compared too), or both raise the same exception type from the call itself. Returns the
    NumPy exception, or None.
    """
    numpy_inputs = [duplicate(value) for value in inputs]
    shoal_inputs = [to_shoal(snp, value) for value in inputs]
    with quiet_floating_point():
        expected, error = outcome(lambda: operation(np, *numpy_inputs))
        if error is not None:
            with pytest.raises(type(error)):
                operation(snp, *shoal_inputs)
            return error
        actual = operation(snp, *shoal_inputs)
        assert_same(actual, expected, rtol=rtol, atol=atol)
        for shoal_input, numpy_input in zip(shoal_inputs, numpy_inputs):
            if isinstance(numpy_input, np.ndarray):
                assert_same(shoal_input, numpy_input, rtol=rtol, atol=atol)
    return None


def summarized(call: Callable[[], Any]) -> tuple[Any, ...]:
    """``call()``'s result as plain values that compare equal where NumPy's and Shoal's agree
    (kind, dtype, shape and items of an array, NaN equal to NaN), or the type and message of the
    exception it raised."""
    try:
        value = call()
        array = np.asarray(value)  # a lazy array's recorded work runs here
    except Exception as error:
        return type(error).__name__, str(error)
    return isinstance(value, np.ndarray | np.generic) or hasattr(value, "shape"), array.dtype.str, array.shape, repr(array.tolist())


# ---------------------------------------------------------------- Hypothesis strategies

dtypes = st.sampled_from(ALL_DTYPES)


def elements(
    dtype: np.dtype, *, bound: float | None = None, finite: bool = False
) -> st.SearchStrategy:
    """Values of ``dtype``; floats without subnormals, within ``bound`` when given."""
    if dtype.kind == "f":
        return hnp.from_dtype(
            dtype,
            allow_subnormal=False,
            allow_nan=not finite and bound is None,
            allow_infinity=not finite and bound is None,
            min_value=-bound if bound else None,
            max_value=bound if bound else None,
        )
    if dtype.kind == "c":
        part = np.dtype(f"float{dtype.itemsize * 4}")
        return st.builds(
            complex,
            elements(part, bound=bound, finite=finite),
            elements(part, bound=bound, finite=finite),
        )
    if dtype.kind in "iu" and bound is not None:
        info = np.iinfo(dtype)
        return st.integers(max(info.min, -int(bound)), min(info.max, int(bound)))
    return hnp.from_dtype(dtype)


def arrays(
    dtype: np.dtype | st.SearchStrategy,
    shape: tuple[int, ...] | st.SearchStrategy,
    *,
    bound: float | None = None,
    finite: bool = False,
) -> st.SearchStrategy:
    """NumPy arrays of ``dtype`` and ``shape`` (values or strategies)."""
    if isinstance(dtype, st.SearchStrategy):
        return dtype.flatmap(lambda d: arrays(d, shape, bound=bound, finite=finite))
    return hnp.arrays(dtype, shape, elements=elements(dtype, bound=bound, finite=finite))


shapes = hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5)
nonempty_shapes = hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=5)
# Mostly shapes that broadcast, sometimes two unrelated ones (NumPy's error must come back).
two_shapes = st.one_of(
    hnp.mutually_broadcastable_shapes(num_shapes=2, min_dims=0, max_dims=3, max_side=4).map(
        lambda drawn: drawn.input_shapes
    ),
    st.tuples(shapes, shapes),
)


def assert_reads_equal(expected: list[Any], got: list[Any]) -> None:
    """Values read from a program under NumPy and under Shoal are the same: tuples equal, arrays
    of the same dtype, shape and elements."""
    assert len(got) == len(expected), (expected, got)
    for want, have in zip(expected, got):
        if isinstance(want, tuple):
            assert have == want
            continue
        assert have.dtype == want.dtype and have.shape == want.shape
        np.testing.assert_array_equal(have, want)


@pytest.fixture
def every_array_lazy() -> Iterator[Any]:
    """A node-engine runtime where every array is lazy and no small view is computed at once."""
    runtime = importlib.import_module("shoal.runtime")
    with runtime.configure(engine="node", eager_threshold=0, settled_threshold=0) as configured:
        yield configured


def count_reads(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """From now on, the size of every lazy array whose contents are read (``_value``), in order."""
    from shoal.numpy import _lazy

    sizes: list[int] = []
    value = _lazy.ndarray._value

    def counted(self: Any, *args: Any, **kwargs: Any) -> Any:
        sizes.append(self.size)
        return value(self, *args, **kwargs)

    monkeypatch.setattr(_lazy.ndarray, "_value", counted)
    return sizes


def same_values_and_warnings(program: Callable[[ModuleType], Any], **configured: Any) -> None:
    """``program`` on NumPy and on ``shoal.numpy`` under a runtime ``configured`` so: the same
    values, and the same warnings (category, message and line), in the same order."""
    runtime = importlib.import_module("shoal.runtime")
    module = importlib.import_module("shoal.numpy")
    with warnings.catch_warnings(record=True) as expected:
        warnings.simplefilter("always")
        want = program(np)
    with runtime.configure(**configured):
        with warnings.catch_warnings(record=True) as got:
            warnings.simplefilter("always")
            have = np.asarray(program(module))
    np.testing.assert_array_equal(have, want)
    assert [(w.category, str(w.message), w.lineno) for w in got] == [(w.category, str(w.message), w.lineno) for w in expected]


@pytest.fixture
def no_fallback() -> Iterator[None]:
    """The test counts no NumPy fallback (``ShoalFallbackWarning`` is given once a process and
    kept silent under an ``error`` filter, so the count is what shows one)."""
    from shoal.numpy import _dispatch

    before = sum(_dispatch.FALLBACKS.values())
    yield
    assert sum(_dispatch.FALLBACKS.values()) == before, f"fallbacks: {dict(_dispatch.FALLBACKS)}"

"""NumPy's floating-point error modes (``np.seterr``, ``np.errstate``, ``np.seterrcall``) with
lazy arrays: each category and mode against NumPy, with the error raised, the handler called or
the message printed by the user's own line.
"""

from __future__ import annotations

import inspect
import io
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType, ModuleType, TracebackType
from typing import Any

import numpy as np
import pytest
from numpy_fixtures import assert_same, flush_count, needs_runtime

import shoal.runtime

N = 1000


def divide(xp: ModuleType, a: Any) -> Any:
    return a / xp.zeros(N)  # signals


def exp(xp: ModuleType, a: Any) -> Any:
    return xp.exp(a)  # signals


def sqrt(xp: ModuleType, a: Any) -> Any:
    return xp.sqrt(a)  # signals


def multiply(xp: ModuleType, a: Any) -> Any:
    return a * a  # signals


def floor_divide(xp: ModuleType, a: Any) -> Any:
    return a // 0  # signals


def in_place_divide(xp: ModuleType, a: Any) -> Any:
    a /= 0  # signals
    return a


def into_out(xp: ModuleType, a: Any) -> Any:
    out = xp.ones(N)
    xp.exp(a, out=out)  # signals
    return out


def masked(xp: ModuleType, a: Any) -> Any:
    out = xp.ones(N)
    xp.sqrt(a, out=out, where=xp.arange(N) % 2 == 0)  # signals
    return out


def sum_(xp: ModuleType, a: Any) -> Any:
    return a.sum()  # signals


def add_reduce(xp: ModuleType, a: Any) -> Any:
    return xp.add.reduce(a)  # signals


def mean(xp: ModuleType, a: Any) -> Any:
    return xp.mean(a, axis=0)  # signals


def cumsum(xp: ModuleType, a: Any) -> Any:
    return xp.cumsum(a)  # signals


def to_int(xp: ModuleType, a: Any) -> Any:
    return a.astype(xp.int64)  # signals


def to_float32(xp: ModuleType, a: Any) -> Any:
    return xp.asarray(a, dtype=xp.float32)  # signals


def divmod_(xp: ModuleType, a: Any) -> Any:
    return xp.divmod(a, 0)[1]  # signals


def assign_float32(xp: ModuleType, a: Any) -> Any:
    target = xp.zeros(N, xp.float32)
    target[...] = a  # signals
    return target


def assign_int(xp: ModuleType, a: Any) -> Any:
    target = xp.zeros(N, xp.int64)
    target[::2] = a[::2]  # signals
    return target


def matmul(xp: ModuleType, a: Any) -> Any:
    return a @ a  # signals


@dataclass(frozen=True)
class Case:
    """One statement that makes NumPy signal ``category`` (with ``message``)."""

    name: str
    category: str
    make: Callable[[ModuleType], Any]
    statement: Callable[..., Any]
    message: str

    @property
    def line(self) -> int:
        """The line of the user's code that signals (marked ``# signals``)."""
        lines, first = inspect.getsourcelines(self.statement)
        return first + next(i for i, text in enumerate(lines) if "# signals" in text)


CASES = [
    Case("divide", "divide", lambda xp: xp.linspace(-1, 1, N), divide, "divide by zero encountered in divide"),
    Case("divide-in-place", "divide", lambda xp: xp.ones(N), in_place_divide, "divide by zero encountered in divide"),
    Case("integer-floor-divide", "divide", lambda xp: xp.arange(N), floor_divide, "divide by zero encountered in floor_divide"),
    Case("divide-divmod", "divide", lambda xp: xp.linspace(1, 2, N), divmod_, "divide by zero encountered in divmod"),
    Case("over", "over", lambda xp: xp.full(N, 1000.0), exp, "overflow encountered in exp"),
    Case("over-out", "over", lambda xp: xp.linspace(0, 1000, N), into_out, "overflow encountered in exp"),
    Case("over-sum", "over", lambda xp: xp.full(N, 1e308), sum_, "overflow encountered in reduce"),
    Case("over-add-reduce", "over", lambda xp: xp.full(N, 1e308), add_reduce, "overflow encountered in reduce"),
    Case("over-mean", "over", lambda xp: xp.full((N, 2), 1e308), mean, "overflow encountered in reduce"),
    Case("over-cumsum", "over", lambda xp: xp.full(N, 1e308), cumsum, "overflow encountered in accumulate"),
    Case("invalid", "invalid", lambda xp: xp.linspace(-2, 2, N), sqrt, "invalid value encountered in sqrt"),
    Case("invalid-where", "invalid", lambda xp: xp.linspace(-2, 2, N), masked, "invalid value encountered in sqrt"),
    Case("invalid-cast", "invalid", lambda xp: xp.full(N, xp.nan), to_int, "invalid value encountered in cast"),
    Case("over-cast", "over", lambda xp: xp.full(N, 1e300), to_float32, "overflow encountered in cast"),
    Case("over-assign", "over", lambda xp: xp.full(N, 1e300), assign_float32, "overflow encountered in cast"),
    Case("invalid-assign", "invalid", lambda xp: xp.full(N, xp.nan), assign_int, "invalid value encountered in cast"),
    Case("over-matmul", "over", lambda xp: xp.full(N, 1e300), matmul, "overflow encountered in matmul"),
    Case("under", "under", lambda xp: xp.full(N, -1000.0), exp, "underflow encountered in exp"),
    Case("under-multiply", "under", lambda xp: xp.full(N, 1e-300), multiply, "underflow encountered in multiply"),
]  # fmt: skip
IDS = [case.name for case in CASES]


def _raising_line(traceback: TracebackType | None) -> int | None:
    """The line of this file's innermost frame in ``traceback``."""
    line = None
    while traceback is not None:
        if traceback.tb_frame.f_code.co_filename == __file__:
            line = traceback.tb_lineno
        traceback = traceback.tb_next
    return line


def _user_line(frame: FrameType | None) -> int | None:
    """The line of the innermost frame of this file at or above ``frame``."""
    while frame is not None and frame.f_code.co_filename != __file__:
        frame = frame.f_back
    return None if frame is None else frame.f_lineno


def _outcome(xp: ModuleType, case: Case, mode: str, handler: Any = None) -> tuple[Any, Any]:
    """(result or None, error message or None) of ``case`` run with its category in ``mode``."""
    operand = case.make(xp)
    state: dict[str, Any] = {"all": "ignore", case.category: mode}
    if handler is not None:
        state["call"] = handler
    try:
        with np.errstate(**state):
            result = case.statement(xp, operand)
    except FloatingPointError as error:
        assert _raising_line(error.__traceback__) == case.line
        return np.asarray(operand), str(error)
    return np.asarray(result), None


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_raise(snp: ModuleType, case: Case) -> None:
    expected, expected_error = _outcome(np, case, "raise")
    actual, actual_error = _outcome(snp, case, "raise")
    assert expected_error == case.message
    assert actual_error == expected_error
    assert_same(actual, expected)  # after the error: the operand as NumPy leaves it


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_raise_from_seterr(snp: ModuleType, case: Case) -> None:
    operand = case.make(snp)
    previous = np.seterr(all="raise")
    try:
        with pytest.raises(FloatingPointError, match=f"^{case.message}$") as excinfo:
            case.statement(snp, operand)
    finally:
        np.seterr(**previous)
    assert _raising_line(excinfo.value.__traceback__) == case.line


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_ignore(snp: ModuleType, case: Case) -> None:
    expected, _ = _outcome(np, case, "ignore")
    actual, _ = _outcome(snp, case, "ignore")
    assert_same(actual, expected)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_call(snp: ModuleType, case: Case) -> None:
    def run(xp: ModuleType) -> tuple[Any, list[tuple[str, int, int]]]:
        calls: list[tuple[str, int, int]] = []

        def handler(kind: str, flag: int) -> None:
            calls.append((kind, flag, _user_line(sys._getframe(1))))

        result, error = _outcome(xp, case, "call", handler)
        assert error is None
        return result, calls

    expected, expected_calls = run(np)
    actual, actual_calls = run(snp)
    assert expected_calls and actual_calls == expected_calls
    assert actual_calls[0][2] == case.line
    assert_same(actual, expected)


@pytest.mark.parametrize("case", CASES, ids=IDS)
def test_print(snp: ModuleType, case: Case, capfd: pytest.CaptureFixture[str]) -> None:
    expected, _ = _outcome(np, case, "print")
    expected_printed = capfd.readouterr().err
    actual, _ = _outcome(snp, case, "print")
    assert expected_printed == f"Warning: {case.message}\n"
    assert capfd.readouterr().err == expected_printed
    assert_same(actual, expected)


@pytest.mark.parametrize("case", CASES[:4], ids=IDS[:4])
def test_log(snp: ModuleType, case: Case) -> None:
    def run(xp: ModuleType) -> str:
        log = io.StringIO()
        _outcome(xp, case, "log", log)
        return log.getvalue()

    expected = run(np)
    assert expected.startswith("Warning:") and case.message in expected
    assert run(snp) == expected


def test_lazy_when_no_mode_needs_the_caller(snp: ModuleType) -> None:
    """Ignored and warned-about categories leave operations lazy: nothing runs at the call."""
    needs_runtime()
    shoal.runtime.current().settled_threshold = 0  # small settled views are computed at once
    a = snp.linspace(-1, 1, N)
    before = flush_count()
    with np.errstate(all="ignore"):
        b = snp.sqrt(a / snp.zeros(N)).sum()
    with np.errstate(all="warn"):
        c = snp.exp(a) * 2
    assert flush_count() == before
    with np.errstate(all="ignore"):
        assert_same(np.asarray(b), np.sqrt(np.linspace(-1, 1, N) / np.zeros(N)).sum())
    assert_same(np.asarray(c), np.exp(np.linspace(-1, 1, N)) * 2)


def test_mode_of_another_category_does_not_raise(snp: ModuleType) -> None:
    a = snp.linspace(-1, 1, N)
    with np.errstate(all="ignore", over="raise"):
        result = a / snp.zeros(N)
    with np.errstate(all="ignore"):
        assert_same(np.asarray(result), np.linspace(-1, 1, N) / np.zeros(N))


def test_each_thread_has_its_own_error_state(snp: ModuleType) -> None:
    """``np.errstate`` is a context variable: one thread's ``"raise"`` leaves another lazy."""
    needs_runtime()
    shoal.runtime.current().settled_threshold = 0  # small settled views are computed at once
    errors: list[str] = []
    entered, leave = threading.Event(), threading.Event()

    def raising() -> None:
        with np.errstate(divide="raise"):
            entered.set()
            leave.wait(10)
            try:
                divide(snp, snp.ones(N))
            except FloatingPointError as error:
                errors.append(str(error))

    thread = threading.Thread(target=raising)
    thread.start()
    entered.wait(10)
    before = flush_count()
    with np.errstate(all="ignore"):
        lazy = divide(snp, snp.ones(N))
    assert flush_count() == before
    leave.set()
    thread.join(10)
    assert errors == ["divide by zero encountered in divide"]
    with np.errstate(all="ignore"):
        assert_same(np.asarray(lazy), np.ones(N) / np.zeros(N))

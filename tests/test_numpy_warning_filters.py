"""Warnings under the program's filters: where and whether they come, as under NumPy.

A lazy operation's warning comes when its batch runs. Programs that record or silence warnings
in a ``warnings.catch_warnings`` block, or change the filters between an operation and the read
of its result, got them wrong: recorded lists stayed empty and the warnings leaked to stderr,
silenced ones printed, a warning pending from before a block went into the block's list, a
filter set after the operation decided it, and ``simplefilter("error")`` after it raised at the
read; a warning given at once (NumPy's own call on a small array, ``warnings.warn``) came
before those pending from earlier lines; ``where=`` computed every element and warned for those it leaves out. Each such program
runs under ``python`` and ``python -m shoal`` with the same output.

Also warnings Shoal itself could add: ``a ** -1`` decided whether to run as ``reciprocal`` on a
probe of zeros and leaked that probe's divide-by-zero warnings from Shoal's own line; a program
that turns warnings into errors crashed on the note that a function ran in NumPy
(:class:`ShoalFallbackWarning`).
"""

from __future__ import annotations

import collections
import os
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import numpy
import pytest

import shoal.numpy as snp
from shoal import runtime
from shoal.errors import ShoalFallbackWarning
from shoal.numpy import _dispatch, _methods


@pytest.fixture
def lazy():
    with runtime.configure(engine="node", eager_threshold=0) as rt:
        yield rt


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64", "uint8"])
@pytest.mark.parametrize("exponent", [-1, -2, -0.5, 0.5, 2, 3])
def test_powers_warn_and_fail_as_numpy(lazy, dtype, exponent):
    _methods._fast_power_for.cache_clear()

    def program(np):
        values = np.arange(1, 9).astype(dtype)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                result = numpy.asarray(values**exponent).tolist()
            except Exception as error:  # NumPy's: integers to negative integer powers
                result = (type(error).__name__, str(error))
        return result, [(w.category, str(w.message), w.filename) for w in caught]

    assert program(snp) == program(numpy)


def test_a_fallback_is_no_error_where_warnings_are_errors(lazy, monkeypatch):
    monkeypatch.setattr(_dispatch, "FALLBACKS", collections.Counter())
    values = snp.arange(1.0, 9.0) * 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert int(snp.nanargmax(values)) == 7  # NumPy's nanargmax, on the computed values
    assert _dispatch.FALLBACKS["nanargmax"] == 1


def test_a_filter_that_names_the_fallback_warning_raises_it(lazy, monkeypatch):
    monkeypatch.setattr(_dispatch, "FALLBACKS", collections.Counter())
    values = snp.arange(1.0, 9.0) * 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", ShoalFallbackWarning)
        with pytest.raises(ShoalFallbackWarning, match="nanargmax"):
            snp.nanargmax(values)


SETUP = "import numpy as np, warnings\na = np.arange(1_000_000, dtype=float)\n"
PROGRAMS = {
    "recorded_in_a_block": """
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            b = a / 0
        print(len(w), sorted(str(x.message) for x in w), {x.lineno for x in w})
    """,
    "recorded_log_read_inside_the_block": """
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            b = np.log(a - 5)
            print(len(w), bool(w), [str(x.message) for x in w], w[0].lineno, w[-1] in w)
            first = list(w)
            w.clear()
            c = np.sqrt(a - 3)
            print(len(w), [x.lineno for x in reversed(w)], w == first, w.pop().category.__name__, len(w))
        print(len(w), len(first))
    """,
    "in_order_around_operations_computed_at_once": """
        with warnings.catch_warnings():
            l = np.log(a)
        x = 1 / a
        warnings.filterwarnings("error", message=".*invalid.*")
        try:
            q = np.sqrt(a - 1)
        except RuntimeWarning:
            pass
        y = np.log(a)
        s = np.sum(np.exp(a * 1000))
        print(x[1], y[1])
    """,
    "from_numpy_calls_made_for_the_program": """
        warnings.filterwarnings("ignore", message="shoal.numpy does not implement")  # ufunc.at's fallback note
        g = np.random.default_rng(0)
        g.multivariate_normal([0, 1], [[1, 2], [2, 1]], size=3)
        np.random.random_integers(1, 5, size=3)
        counts = np.ones(10)
        np.divide.at(counts, np.arange(1_000_000) % 10, 0.0)
        shape = np.fft.irfftn(np.ones((1024, 1024)), s=(20, 21)).shape
        print(counts[:2], shape)
    """,
    "silenced_in_a_block": """
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            b = a / 0
        print(b[1])
    """,
    "pending_before_a_recording_block": """
        b = np.log(a)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            print(b[1])
        print(len(w))
    """,
    "ignored_after_the_operation": """
        b = np.sqrt(-a)
        warnings.simplefilter("ignore")
        print(b[2])
    """,
    "ignored_at_the_operation_and_reset_since": """
        warnings.filterwarnings("ignore", category=RuntimeWarning)
        b = np.sqrt(-a)
        warnings.resetwarnings()
        warnings.simplefilter("default")
        c = np.log(a)
        print(b[2], c[0])
    """,
    "errors_after_the_operation": """
        b = np.sqrt(-a)
        warnings.simplefilter("error")
        print(b[2])
    """,
    "only_the_elements_where_selects": """
        r = np.divide(1, a, where=a > 0, out=np.zeros(1_000_000))
        s = np.sqrt(a - 5, out=np.zeros(1_000_000), where=a >= 5)
        z = np.zeros(1_000_000)
        np.divide(a, a, out=z, where=a != 0)
        unset = np.log(a, where=a > 0)  # NumPy's UserWarning: 'where' without 'out'
        print(r[:3], s[4:7], z[:3], float(z.sum()), unset.shape)
    """,
    "numpy_testing_records": """
        np.testing.assert_warns(RuntimeWarning, np.log, a)
        with np.testing.suppress_warnings() as suppressed:
            recorded = suppressed.record(RuntimeWarning)
            b = np.sqrt(-a)
            print(len(recorded))
        print(b[3])
    """,
    "means_of_empty_selections": """
        warnings.filterwarnings("ignore", category=UserWarning)
        nowhere = np.zeros(1_000_000, bool)
        first = a.mean(where=nowhere)  # the method: NumPy's warning names this line
        second = a.mean(where=nowhere)
        function = np.mean(a, where=nowhere)  # the function: NumPy's own line
        print(first, second, function)
    """,
    "in_the_order_of_their_lines": """
        b = np.log(a - 1)
        c = np.log(np.zeros(3))  # NumPy's own call, warned at once
        warnings.warn("between them")
        d = np.sqrt(np.array([-1.0]) * a[:1])
        for step in range(2):
            e = 1 / (a - step)
            warnings.warn(f"step {step}")
        print(b[0], c[0], d[0], e[0])
    """,
    "once_per_line_across_filter_changes": """
        for step in range(3):
            b = np.log(a - step)
            warnings.filterwarnings("ignore", message="nothing like it")
        print(b[5])
    """,
}


def run_program(path: Path, shoal: bool) -> tuple[int, str, str]:
    environment = {key: value for key, value in os.environ.items() if not key.startswith("SHOAL_")}
    prefix = [sys.executable, "-m", "shoal"] if shoal else [sys.executable]
    result = subprocess.run([*prefix, str(path)], env=environment, capture_output=True, text=True, timeout=100, cwd=path.parent)
    return result.returncode, result.stdout, result.stderr


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_warnings_meet_the_filters_of_their_moment(name, tmp_path):
    path = tmp_path / "program.py"
    path.write_text(SETUP + textwrap.dedent(PROGRAMS[name]))
    expected = run_program(path, shoal=False)
    assert expected[0] == 0 and (expected[2] or name == "silenced_in_a_block" or "recorded" in name or "before" in name)
    assert run_program(path, shoal=True) == expected

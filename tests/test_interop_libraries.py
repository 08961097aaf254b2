"""Shoal arrays handed to other libraries (matplotlib, pandas, Numba, numexpr) give what NumPy
arrays give."""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
from numpy_fixtures import needs_runtime

# A library that runs NumPy functions on a Shoal array gets them through the fallback (NumPy on
# the computed values); the warning that says so is expected here.
pytestmark = pytest.mark.filterwarnings("ignore::shoal.errors.ShoalFallbackWarning")


def _grid(snp: ModuleType) -> tuple[object, np.ndarray]:
    needs_runtime()
    expected = np.cos(np.arange(600.0).reshape(20, 30) / 9.0) * 3.0
    lazy = snp.cos(snp.arange(600.0).reshape(20, 30) / 9.0) * 3.0
    assert type(lazy) is not np.ndarray  # the test really hands over a lazy array
    return lazy, expected


def _render(path: Path, image: object, line: object) -> bytes:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(4, 2), dpi=50)
    try:
        left.imshow(image, cmap="viridis")
        right.plot(line, line * 2.0)
        figure.savefig(path, format="png", metadata={"Software": None})
    finally:
        plt.close(figure)
    return path.read_bytes()


def test_matplotlib_imshow_and_plot_to_png(snp: ModuleType, tmp_path: Path) -> None:
    lazy, expected = _grid(snp)
    shoal_png = _render(tmp_path / "shoal.png", lazy, lazy[4])
    numpy_png = _render(tmp_path / "numpy.png", expected, expected[4])
    assert shoal_png.startswith(b"\x89PNG")
    assert shoal_png == numpy_png


def test_pandas_dataframe_from_shoal_arrays(snp: ModuleType) -> None:
    import pandas as pd

    lazy, expected = _grid(snp)
    frame = pd.DataFrame(lazy)
    pd.testing.assert_frame_equal(frame, pd.DataFrame(expected))
    columns = pd.DataFrame({"a": lazy[:, 0], "b": lazy[:, 1]})
    pd.testing.assert_frame_equal(columns, pd.DataFrame({"a": expected[:, 0], "b": expected[:, 1]}))
    assert columns["a"].to_numpy().dtype == np.float64
    pd.testing.assert_series_equal(pd.Series(lazy[3]).cumsum(), pd.Series(expected[3]).cumsum())


@pytest.mark.full
def test_numba_njit_takes_shoal_arrays(snp: ModuleType) -> None:
    import numba

    @numba.njit(cache=False)
    def weighted_total(values: np.ndarray, weight: float) -> float:
        total = 0.0
        for i in range(values.shape[0]):
            for j in range(values.shape[1]):
                total += values[i, j] * weight
        return total

    lazy, expected = _grid(snp)
    assert weighted_total(np.asarray(lazy), 0.5) == weighted_total(expected, 0.5)
    assert weighted_total(lazy, 0.5) == weighted_total(expected, 0.5)


def test_numexpr_evaluates_shoal_arrays(snp: ModuleType) -> None:
    import numexpr

    lazy, expected = _grid(snp)
    result = numexpr.evaluate("2 * a + sin(b)", local_dict={"a": lazy, "b": lazy.T.copy().T})
    np.testing.assert_array_equal(result, numexpr.evaluate("2 * a + sin(b)", local_dict={"a": expected, "b": expected}))


def test_numba_functions_call_numpy_through_the_programs_numpy(snp: ModuleType) -> None:
    """Under Shoal a program's ``np`` is ``shoal.numpy``: compiled code still calls NumPy's own
    functions through it."""
    import numba

    module = snp

    @numba.njit(cache=False)
    def filled(n: int) -> np.ndarray:
        return module.zeros(n) + module.sqrt(4.0)

    assert filled(3).tolist() == [2.0, 2.0, 2.0]


def test_numba_writes_land_in_the_lazy_array_and_views_alias_it(every_array_lazy: object) -> None:
    """The compiled function gets the array's memory (a component that hands its memory out)."""
    import numba

    import shoal.numpy as snp

    @numba.njit(cache=False)
    def double(values: np.ndarray) -> None:
        for i in range(values.size):
            values[i] *= 2.0

    @numba.njit(cache=False)
    def tail(values: np.ndarray) -> np.ndarray:
        return values[1:]

    lazy = snp.arange(8.0) + 1.0
    double(lazy)
    assert lazy.tolist() == [2.0 * k for k in range(1, 9)]
    rest = tail(lazy)
    rest[0] = -1.0
    assert float(lazy[1]) == -1.0
    frozen = snp.arange(4.0) * 1.0
    frozen.flags.writeable = False
    readonly = np.zeros(4)
    readonly.flags.writeable = False
    assert str(numba.typeof(frozen)) == str(numba.typeof(readonly))
    assert str(numba.typeof(snp.ones((3, 4)) * 1.0)) == "array(float64, 2d, C)"


def _run_both_ways(program: Path, source: str, ways: tuple[tuple[str, ...], ...] = ((), ("-m", "shoal"))) -> list:
    """``source`` written to ``program`` and run as ``python program`` and ``python -m shoal
    program`` (or ``ways``), where Shoal's import hook adapts the libraries it loads."""
    import subprocess
    import sys

    program.write_text(source)
    return [subprocess.run([sys.executable, *way, str(program)], capture_output=True, text=True, timeout=120, check=False) for way in ways]


def test_dask_imports_under_the_import_redirect(tmp_path: Path) -> None:
    """toolz (a dask dependency) keys a dict by the builtins, ``__import__`` included."""
    source = "import numpy as np\nimport dask.array as da\nx = np.arange(2.0 ** 20)\nprint(float((da.from_array(x, chunks=2 ** 18) * 2).sum().compute()))\n"
    (result,) = _run_both_ways(tmp_path / "uses_dask.py", source, ways=(("-m", "shoal"),))
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == str(float(np.arange(2.0**20).sum() * 2))


PANDAS_KEYS = """
import numpy as np
import pandas as pd
n = 1 << 20
x = np.arange(n, dtype=float) % 50
s = pd.Series(x)
print(s.iloc[x > 25].shape, s[x > 25].shape, float(s.loc[x > 25].sum()))
frame = pd.DataFrame({"x": x, "y": x * 2})
print(frame[x > 25].shape, float(frame.loc[x > 25, "y"].sum()), frame.iloc[x > 40].shape)
frame.loc[x > 48, "y"] = 0
s[x < 1] = -1.0
print(float(frame["y"].sum()), float(s.sum()))
print(frame.groupby(np.arange(n) % 2)["x"].sum().tolist())
print(frame.groupby([np.arange(n) % 2, np.arange(n) % 3])["x"].sum().tolist()[:3])
"""


def test_pandas_takes_lazy_masks_and_grouping_keys_as_numpy_arrays(tmp_path: Path) -> None:
    """pandas tells a mask from positions by ``isinstance(key, np.ndarray)``: a lazy mask picked
    rows 0 and 1 (``iloc``) or raised ``KeyError`` (``[]``, ``loc``), and a lazy grouping key
    was called as a function. Run as a program, where Shoal adapts pandas as it loads."""
    runs = _run_both_ways(tmp_path / "pandas_keys.py", PANDAS_KEYS)
    assert [run.returncode for run in runs] == [0, 0], runs[1].stderr[-2000:]
    assert runs[1].stdout == runs[0].stdout
    assert runs[1].stderr == runs[0].stderr == ""


PANDAS_SCALARS = """
import numpy as np
import pandas as pd
x = np.linspace(-3.0, 5.0, 1 << 20)
mean, top, count = x.mean(), x.max(), (x > 0).sum()
print(pd.Series([mean, top, count]).tolist(), pd.Series(data=(count, count)).dtype, pd.Series(mean).dtype)
print(pd.DataFrame({"a": [mean, top], "b": (count, count)}).dtypes.tolist())
print(pd.DataFrame([{"a": mean, "b": count}, {"a": top, "b": count}]).dtypes.tolist())
print(pd.DataFrame([[mean, count], (top, count)]).dtypes.tolist(), pd.DataFrame({"a": mean}, index=[0]).dtypes.tolist())
frame = pd.DataFrame({"a": [1.0, 2.0, 3.0], "b": [1, 2, 3]})
frame["c"] = mean
frame.loc[0, "a"] = top
frame.at[1, "a"] = mean
frame.iloc[2, 1] = count
frame.loc[:, "d"] = [mean, top, mean]
print(frame.dtypes.tolist(), frame.values.tolist())
def pending(k):
    return (x > 0.1 * k).sum()  # not read yet: a lazy key, not NumPy's scalar

print(pd.Index([10, 20, 30])[pending(1) % 3], pd.RangeIndex(9)[pending(2) % 4], pd.Series(range(10)).head(pending(3) % 7).tolist())
print(pd.Series(range(10)).iloc[pending(4) % 5 : pending(5) % 9].tolist(), frame.iloc[pending(6) % 2].tolist())
"""


def test_pandas_makes_numpys_columns_of_scalar_results(tmp_path: Path) -> None:
    """pandas took results that stand for scalars for Python objects: a Series or DataFrame made
    of them, or a column set to one, had dtype ``object``; one still to be computed, as a
    position (``head(n)``, an index's item, a slice's bounds), raised ``TypeError`` or
    ``AssertionError``."""
    runs = _run_both_ways(tmp_path / "pandas_scalars.py", PANDAS_SCALARS)
    assert [run.returncode for run in runs] == [0, 0], runs[1].stderr[-2000:]
    assert "object" not in runs[0].stdout
    assert runs[1].stdout == runs[0].stdout


NUMEXPR_OUT = """
import numpy as np
import numexpr as ne
from numexpr import evaluate
a = np.ones(1 << 20)
out = np.empty(1 << 20)
ne.evaluate("2 * a", out=out)
def inside(b):
    into = np.zeros(1 << 20)
    evaluate("b + 1", out=into)
    return into
print(float(out.sum()), float(inside(a).sum()), float(ne.evaluate("a * 3").sum()))
from scipy import ndimage
image = np.ones((1024, 1024))
image[100:200, 100:200] = 5.0
smooth = np.zeros((1024, 1024))
ndimage.gaussian_filter(image, 1, output=smooth)
labels = np.zeros((1024, 1024), dtype=np.int32)
found = ndimage.label(image > 2, None, labels)
shifted = np.zeros((1024, 1024))
ndimage.shift(image, 1.5, output=shifted)
print(float(smooth.sum()), found, int(labels.max()), float(shifted.sum()))
"""


def test_numexpr_and_ndimage_write_into_a_lazy_output(tmp_path: Path) -> None:
    """numexpr refused a lazy ``out=`` (not a ``numpy.ndarray``); ``scipy.ndimage`` wrote its
    filters into a copy of a lazy ``output=`` and took one for a dtype in ``label``. They write
    into its memory now (numexpr still finding the caller's variables)."""
    runs = _run_both_ways(tmp_path / "library_outputs.py", NUMEXPR_OUT)
    assert [run.returncode for run in runs] == [0, 0], runs[1].stderr[-2000:]
    assert runs[1].stdout == runs[0].stdout


SPARSE_TIMES_SCALARS = """
import numpy as np
import scipy.sparse as sp
x = np.linspace(0.0, 1.0, 1 << 20)
mean, count = x.mean(), (x > 0.5).sum()
for matrix in (sp.eye(3), sp.csr_matrix(np.eye(4)), sp.eye_array(3)):
    print(repr((matrix * mean).toarray()), repr((mean * matrix).toarray()), repr((matrix * count).dtype))
print(repr((sp.diags(np.ones(1 << 20)) * mean).sum()))
"""


def test_sparse_matrices_times_a_scalar_result(tmp_path: Path) -> None:
    """A SciPy sparse matrix's ``*`` took a lazy scalar result for an operand of no dimensions
    it cannot interpret (``ValueError``); NumPy's scalar gives a scaled matrix."""
    runs = _run_both_ways(tmp_path / "sparse_scalars.py", SPARSE_TIMES_SCALARS)
    assert [run.returncode for run in runs] == [0, 0], runs[1].stderr[-2000:]
    assert runs[1].stdout == runs[0].stdout


STATISTICS_OF_SCALARS = """
import statistics
from statistics import mean
import numpy as np
x = np.linspace(-3.0, 5.0, 1 << 20)
counts = [(x > 0).sum(), (x > 1).sum(), np.arange(1 << 20).max()]
values = [x.mean(), x.max(), x.std(), x[5]]
print(repr(mean(values)), repr(mean(counts)), repr(statistics.fmean(values)))
print(repr(statistics.variance(values)), repr(statistics.stdev(values, xbar=x.mean())), repr(statistics.pvariance(counts)))
print(repr(statistics.median(v for v in values)), repr(statistics.quantiles(tuple(values), n=3)))
print(repr(statistics.correlation(values, values[::-1])), repr(statistics.mean(x[:1000])))
"""


def test_statistics_of_scalar_results(tmp_path: Path) -> None:
    """``statistics.mean`` and the variances converted their answer to the type of the data and
    raised ``TypeError: don't know how to coerce`` on a list of lazy scalar results beside NumPy
    scalars; they get NumPy's scalars now (from a list, a tuple, a generator or a keyword)."""
    runs = _run_both_ways(tmp_path / "statistics_of_scalars.py", STATISTICS_OF_SCALARS)
    assert [run.returncode for run in runs] == [0, 0], runs[1].stderr[-2000:]
    assert runs[1].stdout == runs[0].stdout


LIBRARY_SOURCE = '''
import numpy as np

def gradient_as_the_library_reads_it(g):
    return np.atleast_1d(g).astype(np.float64), np.concatenate([g, g])
'''


def test_a_library_calling_numpy_on_small_lazy_arrays_gets_numpys_arrays(snp: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A library's call of a NumPy function on a small lazy array the program handed it (an
    optimizer's gradient) returns NumPy's array, which its compiled code takes; the program's
    own call, and a library's on a large array, stay lazy."""
    needs_runtime()
    site = tmp_path / "site-packages"
    site.mkdir()
    (site / "shoal_test_fitlib.py").write_text(LIBRARY_SOURCE)
    monkeypatch.syspath_prepend(str(site))
    import shoal_test_fitlib

    data = snp.linspace(0.0, 1.0, 600_000)
    gradient = data[:3] * 2.0 + data.mean()
    assert type(gradient) is not np.ndarray
    read, joined = shoal_test_fitlib.gradient_as_the_library_reads_it(gradient)
    assert type(read) is np.ndarray and type(joined) is np.ndarray
    expected = np.linspace(0.0, 1.0, 600_000)
    np.testing.assert_array_equal(read, expected[:3] * 2.0 + expected.mean())
    assert type(snp.atleast_1d(gradient)) is not np.ndarray
    assert type(shoal_test_fitlib.gradient_as_the_library_reads_it(data)[1]) is not np.ndarray


@pytest.mark.parametrize("method", ["L-BFGS-B", "SLSQP"])
def test_scipy_minimize_with_a_gradient_from_lazy_data(snp: ModuleType, method: str) -> None:
    """SciPy's L-BFGS-B and SLSQP pass the gradient to compiled code that takes only NumPy arrays."""
    from scipy.optimize import minimize

    needs_runtime()

    def fit(xp: ModuleType) -> np.ndarray:
        data = xp.linspace(0.0, 1.0, 600_000)

        def target() -> object:
            return data[:2] + data.mean()

        result = minimize(lambda w: xp.sum((w - target()) ** 2), np.zeros(2), jac=lambda w: 2 * (w - target()), method=method)
        assert result.success
        return result.x

    np.testing.assert_allclose(fit(snp), fit(np), rtol=1e-12)

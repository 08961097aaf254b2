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

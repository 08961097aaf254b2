"""Functions that hand a lazy array's values out (``np.save``, ``np.savez``, ``np.savetxt``,
``tobytes``, ``tofile``, ``dump``/``dumps``) compute it and call NumPy: the same bytes and files as
NumPy's, and no ``ShoalFallbackWarning`` (warnings are errors here): computing the array is their
implementation, not a missing one."""

from __future__ import annotations

import io
import pickle
import warnings
from pathlib import Path

import numpy
import pytest
from numpy_fixtures import needs_runtime

import shoal.numpy as snp
from shoal import runtime


@pytest.fixture
def lazy():
    needs_runtime()
    with runtime.configure(engine="node", eager_threshold=0) as rt:
        yield rt


def _pair() -> tuple[numpy.ndarray, object]:
    values = numpy.arange(60.0).reshape(6, 10) ** 1.5
    return values, snp.array(numpy.arange(60.0).reshape(6, 10)) ** 1.5


def test_files_and_bytes_are_numpys(lazy, tmp_path: Path):
    values, array = _pair()
    for writer in (numpy.save, snp.save):
        buffer = io.BytesIO()
        writer(buffer, array if writer is snp.save else values)
        buffer.seek(0)
        numpy.testing.assert_array_equal(numpy.load(buffer), values)
    snp.savez(tmp_path / "plain.npz", a=array, b=array[::2])
    snp.savez_compressed(tmp_path / "packed.npz", a=array)
    with numpy.load(tmp_path / "plain.npz") as plain, numpy.load(tmp_path / "packed.npz") as packed:
        numpy.testing.assert_array_equal(plain["b"], values[::2])
        numpy.testing.assert_array_equal(packed["a"], values)
    snp.savetxt(tmp_path / "values.txt", array, fmt="%.6f")
    numpy.savetxt(tmp_path / "expected.txt", values, fmt="%.6f")
    assert (tmp_path / "values.txt").read_text() == (tmp_path / "expected.txt").read_text()
    assert array.tobytes() == values.tobytes() and array.T.tobytes(order="F") == values.T.tobytes(order="F")
    array.tofile(tmp_path / "raw.bin")
    assert (tmp_path / "raw.bin").read_bytes() == values.tobytes()
    numpy.testing.assert_array_equal(pickle.loads(array.dumps()), values)
    array.dump(tmp_path / "dumped.pickle")
    numpy.testing.assert_array_equal(numpy.load(tmp_path / "dumped.pickle", allow_pickle=True), values)


def test_they_are_not_counted_as_fallbacks_and_a_real_fallback_still_is(lazy, tmp_path: Path):
    values, array = _pair()
    before = snp.fallbacks_used()
    snp.save(tmp_path / "a.npy", array)
    array.tobytes()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", snp.ShoalFallbackWarning)  # warned once per process: maybe earlier
        numpy.testing.assert_array_equal(snp.histogram_bin_edges(array, bins=4), numpy.histogram_bin_edges(values, bins=4))
    after = snp.fallbacks_used()
    assert after.get("histogram_bin_edges", 0) == before.get("histogram_bin_edges", 0) + 1
    assert not {"save", "ndarray.tobytes"} & set(after)

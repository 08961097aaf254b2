"""Element-wise results keep their operands' axis order, as NumPy's do (order ``K``): ``a.T + 1``
is Fortran-contiguous, so iterating it in memory order (``np.nditer``, ``ravel(order="K")``)
meets its elements in NumPy's order."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy
import pytest
from numpy_fixtures import needs_runtime

LARGE = (4, 1 << 18)  # lazy at the default threshold


def cases(np, base):
    cube = base.reshape(4, 512, 512)
    return {
        "transposed plus scalar": base.T + 1.0,
        "function of a transpose": np.sqrt(base.T),
        "two transposes": base.T * base.T,
        "transpose and a broadcast row": base.T + base.T[0],
        "C order where the operands disagree": base.T + numpy.ascontiguousarray(base.T),
        "axes permuted": cube.transpose(1, 0, 2) - 2.0,
        "strided transpose": base[::2, ::4].T + 0.5,
        "negated transpose": -base.T,
    }


def assert_layouts_as_numpys(make, eager_threshold: int | None, strides: bool = True) -> None:
    """The arrays ``make(np, base)`` returns have NumPy's flags (and strides), and meet their
    elements in NumPy's memory order (``empty_like``'s values aside)."""
    needs_runtime()
    import shoal.numpy as snp
    from shoal import runtime

    base = numpy.arange(numpy.prod(LARGE), dtype=numpy.float64).reshape(LARGE)
    expected = make(numpy, base)
    with runtime.configure(engine="node", eager_threshold=eager_threshold):
        got = make(snp, snp.array(base))
        for name, value in expected.items():
            result = got[name]
            assert (result.flags.f_contiguous, result.flags.c_contiguous) == (value.flags.f_contiguous, value.flags.c_contiguous), name
            assert not strides or result.strides == value.strides, name
            if name != "empty_like":
                numpy.testing.assert_array_equal(numpy.asarray(result).ravel(order="K"), value.ravel(order="K"), err_msg=name)
                assert [float(x) for x in list(snp.nditer(result))[:8]] == [float(x) for x in list(numpy.nditer(value))[:8]], name


@pytest.mark.parametrize("eager_threshold", [None, 0])
def test_element_wise_results_take_their_operands_axis_order(eager_threshold: int | None) -> None:
    assert_layouts_as_numpys(cases, eager_threshold)


def made_like(np, base):
    return {
        "zeros_like": np.zeros_like(base.T),
        "empty_like": np.empty_like(base.T),
        "ones_like order A": np.ones_like(base.T, order="A"),
        "full_like": np.full_like(base.T, 2.0),
        "zeros_like order C": np.zeros_like(base.T, order="C"),
        "ones_like of a C array": np.ones_like(base),
        "copy": np.copy(base.T),
        "astype": base.T.astype(np.float32),
        "method copy: C": base.T.copy(),
    }


@pytest.mark.parametrize("eager_threshold", [None, 0])
def test_arrays_made_like_a_transpose_take_its_order(eager_threshold: int | None) -> None:
    assert_layouts_as_numpys(made_like, eager_threshold, strides=False)


SAVED_AFTER_READS = """
import io, sys
import numpy as np

a = np.arange(4 * 2**18, dtype=float).reshape(4, 2**18)
b = a.T * 2 + a.T
c = np.sqrt(b) - 1
d = c.T.sum(axis=1)
e = np.zeros_like(b)
e[...] = c
print(d, (e + 1).ravel(order="K")[:5], b.flags.f_contiguous, float(np.nditer(c).__next__()), e.strides)
g = c[::3] + c[::3]
print(g.flags.c_contiguous, g.flags.f_contiguous, float(g.sum()))
buffer = io.BytesIO()
np.save(buffer, c)  # a Fortran-ordered result whose base the reads left in NumPy memory
sys.stdout.buffer.write(buffer.getvalue()[:160])
print(len(buffer.getvalue()))
"""


def test_a_fortran_ordered_result_saves_as_numpys_after_reads(tmp_path: Path) -> None:
    program = tmp_path / "saved.py"
    program.write_text(SAVED_AFTER_READS)
    runs = [subprocess.run([sys.executable, *way, str(program)], capture_output=True, timeout=120, check=False) for way in ((), ("-m", "shoal"))]
    assert runs[0].returncode == 0, runs[0].stderr
    assert (runs[1].returncode, runs[1].stdout, runs[1].stderr) == (runs[0].returncode, runs[0].stdout, runs[0].stderr)

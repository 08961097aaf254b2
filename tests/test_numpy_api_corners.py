"""Corners of NumPy's API where lazy arrays answered otherwise, each program run on NumPy and on
Shoal with every array lazy.

Found by trying NumPy's API as real code uses it: ``np.pad(mode="mean", stat_length=0)`` called
``np.pad`` again with ``mean``'s arguments; ``a.flags`` lacked ``fnc``, ``forc`` and most keys
(``np.isfortran`` raised); ``np.asarray(x, order=...)`` ignored the order (a write to the result
changed ``x``); ``a.conj()`` of a real array copied (and turned booleans into int8), where NumPy
returns the array itself; ``b ** 2`` of booleans gave int64, not NumPy's int8 (``square``);
``np.ascontiguousarray`` of a 0-d array kept 0 dimensions; ``pow(a, 2, 5)`` named a Shoal
function; ``np.lib.stride_tricks.as_strided`` laid its strides over a compact copy of a strided
view (reading past its end: a segmentation fault at large sizes). An operand NumPy's operators leave the operation to (a class with
``__array_ufunc__ = None`` or a higher ``__array_priority__``, ``np.matrix``, masked arrays,
scipy's sparse matrices) was taken in as an object element.
"""

from __future__ import annotations

import decimal
import fractions
import warnings
from types import ModuleType

import numpy
import pytest
from numpy_fixtures import summarized

import shoal.numpy as snp


def outcome(function):
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            value = function()
    except Exception as error:
        return type(error).__name__, str(error)
    given = sorted(str(warning.message) for warning in caught if warning.category is not snp.ShoalFallbackWarning)
    if hasattr(value, "shape"):
        kind = type(value).__name__ if isinstance(value, numpy.ndarray) and type(value) is not numpy.ndarray else ""
        return kind, repr(numpy.asarray(value).tolist()), str(numpy.asarray(value).dtype), given  # repr: NaN equals NaN
    return value, given


def padded(np):
    a = np.arange(12.0) * 1
    median = outcome(lambda: np.pad(a, 1, mode="median", stat_length=0))
    return [outcome(lambda: np.pad(a, 1, mode="mean", stat_length=0)), median[:3]]  # median's warnings say "scalar divide"


def flags(np):
    c = np.arange(12.0).reshape(3, 4) * 1
    f = c.T
    keys = ("C", "F", "O", "W", "A", "X", "B", "CA", "FA", "FNC", "FORC", "BEHAVED", "CARRAY", "FARRAY", "CONTIGUOUS", "FORTRAN", "OWNDATA", "WRITEABLE", "ALIGNED", "WRITEBACKIFCOPY")
    names = ("fnc", "forc", "behaved", "carray", "farray", "fortran", "c_contiguous", "f_contiguous")
    found = [[array.flags[key] for key in keys] + [getattr(array.flags, name) for name in names] for array in (c, f, c[:, ::2])]

    def set_flag(key, value):
        c.flags[key] = value
        return c.flags.writeable

    return [found, np.isfortran(c), np.isfortran(f), outcome(lambda: c.flags["Z"]), outcome(lambda: c.flags["c_contiguous"]),
            outcome(lambda: set_flag("C", True)), outcome(lambda: set_flag("A", True)), outcome(lambda: set_flag("W", False))]  # fmt: skip


def ordered(np):
    a = np.arange(24.0).reshape(4, 6) * 1
    results = []
    for x in (a, a.T, a[:, ::2], a[0], a[:1]):
        for order in ("C", "F", "A", "K", None):
            converted = np.asarray(x, order=order)
            results.append([converted is x, converted.flags.c_contiguous, converted.flags.f_contiguous, outcome(lambda x=x, order=order: np.asarray(x, order=order, copy=False) is x)])
    c = np.asarray(a.T, order="C")
    c[0, 0] = -1.0
    results.append([float(a[0, 0]), np.asarray(a, order="F", dtype=np.float32).flags.f_contiguous, outcome(lambda: np.asarray(a, order="Q"))])
    return results


def conjugated(np):
    a = np.arange(6.0) * 1
    c = a.conj()
    c[0] = 99.0
    z = (np.arange(3.0) * 1j) + 1
    return [float(a[0]), c is a, a.conjugate() is a, a.real is a, str((a > 2).conj().dtype), numpy.asarray(z.conj()).tolist()]


def powers(np):
    b = np.arange(6) % 3 == 0
    results = [outcome(lambda: b**2), outcome(lambda: b**2.0), outcome(lambda: b**1), outcome(lambda: np.power(b, 2))]

    def in_place():
        c = b.copy()
        c **= 2
        return c

    return [*results, outcome(in_place), outcome(lambda: pow(np.arange(4.0) * 1, 2, 5))]


def contiguous(np):
    s = (np.ones(8) * 1).sum()
    return [outcome(lambda: np.ascontiguousarray(s)), outcome(lambda: np.ascontiguousarray(np.arange(12.0).reshape(3, 4).T * 1))]


class Priority:
    __array_priority__ = 1000

    def __radd__(self, other):
        return "Priority.__radd__"

    def __rmatmul__(self, other):
        return "Priority.__rmatmul__"


class NoUfuncs:
    __array_ufunc__ = None

    def __rmul__(self, other):
        return "NoUfuncs.__rmul__"

    def __rlt__(self, other):
        return "never called"

    def __gt__(self, other):
        return "NoUfuncs.__gt__"


def deferred(np):
    x = np.arange(4.0) * 1
    m = numpy.matrix(numpy.arange(16.0).reshape(4, 4))
    column = (np.ones(4) * 1).reshape(4, 1)
    masked = numpy.ma.masked_array(numpy.arange(4.0), mask=[True, False, True, False])
    total = x + masked
    called = [type(np.add(masked, x)).__name__, type(np.multiply(x, masked)).__name__, int(np.add(masked, x).count())]
    return [*called,
        x + Priority(), x @ Priority(), x * NoUfuncs(), x < NoUfuncs(),
        outcome(lambda: m * column), outcome(lambda: column.T * m),
        type(total).__name__, numpy.ma.getmaskarray(total).tolist(), float(total.sum()),
    ]  # fmt: skip


def sparse(np):
    scipy_sparse = pytest.importorskip("scipy.sparse")
    matrix = scipy_sparse.csr_matrix(numpy.eye(4) * 2.0)
    dense = np.ones((4, 4)) * 1
    product = dense * matrix
    return [type(product).__name__, numpy.asarray(product.todense() if hasattr(product, "todense") else product).tolist(), numpy.asarray(np.ones(4) * 1 @ matrix).tolist()]


def strided(np):
    x = np.arange(96.0).reshape(8, 12) * 1
    w = x[:, ::2]
    over_view = np.lib.stride_tricks.as_strided(w, shape=w.shape, strides=w.strides)
    windows = np.lib.stride_tricks.as_strided(x, shape=(4, 3), strides=(8, 8))
    windows[0, 0] = -5.0  # NumPy's view of the memory: the write lands in x
    return [numpy.asarray(over_view).tolist(), numpy.asarray(windows).tolist(), float(x.sum()), numpy.asarray(x[0, :3]).tolist()]


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
@pytest.mark.parametrize("program", [padded, flags, ordered, conjugated, powers, contiguous, deferred, sparse, strided], ids=lambda p: p.__name__)
def test_api_corner_is_numpys(every_array_lazy, program):
    assert program(snp) == program(numpy)


def sorted_in_place(np):
    a = np.arange(24.0).reshape(2, 12) * 1
    frozen = a.copy()
    frozen.flags.writeable = False
    return [
        outcome(lambda: a.sort(axis=None)), outcome(lambda: frozen.sort()), outcome(lambda: frozen.partition(3)),
        outcome(lambda: np.take_along_axis(a, numpy.array([[0, 1]]), axis=0)), outcome(lambda: np.take_along_axis(a, [1, 2], axis=0)),
        outcome(lambda: np.take_along_axis(a, numpy.array([[1, 0, 1]]), axis=1)),
    ]  # fmt: skip


def test_in_place_sorting_and_gathers_fail_as_numpys(every_array_lazy):
    """``a.sort(axis=None)`` broadcast a flat sort into the matrix (ValueError, not NumPy's
    TypeError); read-only arrays named the assignment, not the sort; ``take_along_axis``'s
    mismatched indices raised ValueError where NumPy raises IndexError."""
    assert sorted_in_place(snp) == sorted_in_place(numpy)


def float_indices(np):
    a = np.arange(12, dtype=float)
    i = np.arange(12)
    messages = set()
    for _ in range(40):  # the loop makes ``a`` a held base (shoal.held) partway through
        a * 2
        try:
            a[i.astype(float)]
        except IndexError as error:
            messages.add(str(error))
    return messages


def test_a_float_index_array_fails_as_numpys_also_once_the_base_is_held():
    """A lazy float index met NumPy's indexing of held memory as an unknown object: from the
    23rd iteration on it named slices and ellipsis instead of the index's dtype."""
    from shoal import runtime

    with runtime.configure(engine="node", eager_threshold=0):
        assert float_indices(snp) == float_indices(numpy)


def strings_stored(np):
    results = []
    for dtype in (bool, np.int8, np.uint16, np.complex128, np.float32, np.float64):
        for value in ("1", "0", "x", "", "2.5", "300"):
            b = np.zeros(40, dtype=dtype)
            results.append(outcome(lambda b=b, value=value: b.__setitem__(slice(0, 2), value) or b[:3]))
            results.append(outcome(lambda b=b, value=value: b.fill(value) or b[:3]))
    a = np.zeros(40)
    results.append([outcome(lambda: np.round(a, "2")), outcome(lambda: np.round(a, 2.5)), outcome(lambda: np.round(a, np.int64(1)))])
    return results


def test_strings_stored_into_number_arrays_convert_as_numpys(every_array_lazy):
    """``a[0:5] = "3"`` and ``a.fill("3")`` raised an internal BytecodeError (a string constant);
    ``a.fill("x")`` named ``np.str_('x')``; ``np.round(a, "2")`` named ``abs()``."""
    assert strings_stored(snp) == strings_stored(numpy)


def saved_in_memory_order(np):
    import io

    a = np.arange(24.0).reshape(4, 6) * 1
    files = []
    for value in (a, a.T, a[:, ::2], a.T[::2]):
        buffer = io.BytesIO()
        np.save(buffer, value)
        files.append(buffer.getvalue())
    return files


def test_saving_a_transposed_array_writes_numpys_file(every_array_lazy):
    """``np.save(f, a.T)`` wrote C order and ``fortran_order: False``: another file than NumPy's
    (the values loaded back the same)."""
    assert saved_in_memory_order(snp) == saved_in_memory_order(numpy)


def unsupported_views(np):
    ns = np.arange(40, dtype=np.int64) * 1_000_000_000
    t = ns.view("datetime64[ns]")
    f = np.arange(40.0) * 1
    s = f.view([("lo", "<u4"), ("hi", "<u4")])
    first = [str(t.min()), str(t[3]), numpy.asarray(t == t).tolist()[:3], str(np.diff(t)[0]), numpy.asarray(s == s).tolist()[:3], numpy.asarray(s["hi"][:3]).tolist()]
    s["lo"] = 1
    ns[0] = 5_000_000_000
    views = [str(f.view(dtype).dtype) for dtype in ("S8", "U2", "V8", "m8[s]")]
    return [*first, numpy.asarray(f[:2].view(np.uint32)).tolist(), str(t[0]), views]


def zeros_of_text(np):
    return [
        repr(np.zeros((2, 2), dtype="U3")), repr(np.zeros((2,), dtype=[("name", "U4"), ("x", "f8")])), repr(np.zeros(40, dtype="S2")[:2]),
        int(np.count_nonzero(np.zeros(40, "U3"))), repr(np.ones((2, 2), dtype="U3")), repr(np.full((2,), 7, dtype="U3")),
    ]  # fmt: skip


def rounded(np):
    b = np.arange(40) % 2 == 0
    f = (np.arange(40, dtype=np.float32) - 20) * np.float32(174762.69 / 20)
    c = f.astype(np.complex64) * (1 + 0.5j)
    into = np.zeros(40, np.complex64)
    np.round(c, 1, out=into)
    return [
        outcome(lambda: np.round(b)), outcome(lambda: b.round()), outcome(lambda: np.round(b, 1)), outcome(lambda: np.round(b, -1)),
        outcome(lambda: np.round(c, 2)), outcome(lambda: np.round(c, -2)), outcome(lambda: np.round(c.astype(np.complex128) / 7, 3)), outcome(lambda: into),
        outcome(lambda: (np.arange(40) + 1j).astype(str)), outcome(lambda: (np.arange(40) + 1j).astype("S10")),
    ]  # fmt: skip


def contracted(np):
    m = np.ones((6, 6)) * 1
    v = np.ones(36) * 1
    return [repr(np.einsum("ij,ij->", m, m)), repr(np.einsum("ij,ij->", m, m, optimize=True)), repr(np.einsum("ii", m, optimize=True)), repr(np.einsum("i,i", v, v, optimize="greedy")), repr(np.einsum("ij->", m, optimize=True))]


@pytest.mark.parametrize("program", [unsupported_views, zeros_of_text, rounded, contracted], ids=lambda p: p.__name__)
def test_dtypes_at_the_edges_are_numpys(every_array_lazy, program):
    """Views into dates, text and records raised an internal BytecodeError (or compared unequal to
    themselves); ``np.zeros`` of text dtypes held ``"0"``; rounding booleans kept them booleans
    and rounded complex64 in double precision; complex to text warned ``ComplexWarning``;
    ``einsum``'s optimized contractions to 0-d gave a scalar where NumPy gives a 0-d array."""
    assert program(snp) == program(numpy)


def selected_out_of_range(np):
    u8 = np.zeros(40, dtype=np.uint8)
    u8[5] = 3
    i8 = np.zeros(40, dtype=np.int8)
    return [outcome(lambda: np.where(u8 > 0, u8, -1)), outcome(lambda: np.where(u8 > 0, u8, 300)), outcome(lambda: np.where(u8 > 0, -2, u8)),
            outcome(lambda: np.where(i8 == 0, i8, -200)), outcome(lambda: np.where(i8 == 0, 1.5, i8))]  # fmt: skip


def shared_views(np):
    a = np.arange(40.0) * 1
    m = np.ma.masked_array(a, mask=a > 10)
    m[0] = -1.0
    matrix = np.asmatrix(a.reshape(4, 10))
    matrix[0, 1] = -2.0
    fresh = np.arange(40.0) * 2  # pending: its views are lazy
    corner = np.asmatrix(fresh.reshape(4, 10)[1:3, 2:4])  # a strided view: "ndarray is not contiguous"
    corner[0, 0] = -4.0
    required = np.require(a, requirements="C")
    required[2] = -3.0
    square = np.zeros((6, 6)) * 1
    diagonal = np.einsum("ii->i", square)
    diagonal[0] = 5.0
    np.einsum("ij->ji", square)[1, 0] = 7.0
    field = a.getfield(np.float64)
    field[3] = -5.0
    padded = np.zeros(40) * 1
    padded[5:8] = 1.0
    trimmed = np.trim_zeros(padded)
    trimmed[0] = 9.0
    halves = a.getfield(np.uint32, 4)
    grid = np.zeros((4, 6)) * 1
    full, row = np.broadcast_arrays(grid, np.ones(6) * 1)
    full[0, 0] = -6.0  # an operand already of the broadcast shape is returned itself
    return [numpy.asarray(a[:4]).tolist(), float(fresh[12]), (corner * corner).tolist(), type(matrix).__name__, bool(diagonal.flags.writeable), numpy.asarray(square[0, :2]).tolist(),
            float(padded[5]), trimmed.shape, numpy.asarray(halves[:3]).tolist(), full is grid, float(grid[0, 0]), row.shape]  # fmt: skip


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
@pytest.mark.parametrize("program", [selected_out_of_range, shared_views], ids=lambda p: p.__name__)
def test_whole_script_findings_are_numpys(every_array_lazy, program):
    """``np.where(u8 > 0, u8, -1)`` failed in the engine (a Python int out of the output's range
    copied into it); a masked array, ``np.asmatrix`` and ``np.require`` of a lazy array, and
    einsum's views of one operand, ``getfield`` and ``trim_zeros``, were copies or read-only where
    NumPy's share the memory."""
    assert program(snp) == program(numpy)


def submodule_corners(np):
    a = np.ones((16, 16)) * 1
    data = np.arange(40) % 7
    x = np.full(40, 50000, dtype=np.int32)
    m = np.ones((8, 4)) * 1
    into = np.empty(8)
    return [
        outcome(lambda: np.fft.fftn(a, s=(4, -1), axes=(0, 1))), outcome(lambda: np.fft.ifftn(a, s=(-1, 8), axes=(0, 1))),
        outcome(lambda: np.fft.fft(a, n=10.0)), float(a.sum()),
        numpy.asarray(np.random.default_rng(data.max()).random(2)).tolist(), numpy.asarray(np.random.default_rng(data[:4]).random(2)).tolist(),
        outcome(lambda: np.linalg.norm(x)), outcome(lambda: np.linalg.norm(x.reshape(2, -1), axis=1)),
        np.vecdot(m, m, out=into) is into, type(np.matvec(m, np.ones(4) * 1, out=np.empty(8))).__name__,
        repr(np.round(np.arange(40).sum())), repr([np.round((np.arange(40) * 1j).sum(), 2)]),
        outcome(lambda: np.polynomial.polynomial.polyval(np.linspace(0, 1, 40), [[1.0], [2.0]])),
        outcome(lambda: np.polynomial.polynomial.polyvalfromroots(np.linspace(0, 1, 40), [1.0, 2.0])),
        outcome(lambda: np.polynomial.chebyshev.chebval(np.linspace(0, 1, 40), numpy.ones((3, 4)))),
    ]  # fmt: skip


def test_submodule_corners_are_numpys(every_array_lazy):
    """``fftn`` with -1 in ``s`` made a negative shape (the next read failed in the bytecode);
    ``fft(n=10.0)`` was accepted; a lazy seed was refused; ``linalg.norm`` squared integers before
    converting them (overflow); ``vecdot(..., out=o)`` returned ``(o,)``; rounding a result
    standing for an integer or complex scalar gave a 0-d array; ``numpy.polynomial``'s evaluation
    with 2-D coefficients gave the wrong shape for a lazy ``x``."""
    assert submodule_corners(snp) == submodule_corners(numpy)


def test_as_strided_over_a_copy_keeps_the_views_geometry(every_array_lazy, monkeypatch):
    """Where the component does not hand its memory out (a server, MPI ranks), ``as_strided`` of
    a strided view got a compact copy and laid the view's strides over it: wrong values, and a
    segmentation fault at large sizes. The copy now spans the view's bytes of the base."""
    from shoal.numpy import _held_indexing

    monkeypatch.setattr(_held_indexing, "held_memory", lambda value: None)
    x = snp.arange(64.0 * 32).reshape(64, 32) * 1
    w = x[:, ::2]
    with pytest.warns(snp.ShoalFallbackWarning):
        strided = numpy.lib.stride_tricks.as_strided(w, shape=(64, 16), strides=w.strides)
    expected = numpy.arange(64.0 * 32).reshape(64, 32)[:, ::2]
    assert numpy.array_equal(strided, expected)


def test_a_linalg_error_told_by_another_process_is_numpys():
    """A server or a rank reports a ``LinAlgError`` as text in an ``EngineError``."""
    from shoal.engine.component import EngineError
    from shoal.numpy._linalg_functions import _flush_for_errors

    class Failing:
        def flush(self, wait):
            raise EngineError("a batch failed on the cluster: rank 0: LinAlgError: Singular matrix (in instruction 2: linalg)")

    with pytest.raises(numpy.linalg.LinAlgError, match=r"^Singular matrix$"):
        _flush_for_errors(Failing())


FILL_VALUES = [
    None, decimal.Decimal("1.1"), fractions.Fraction(1, 3), numpy.longdouble(0.1), numpy.str_("4.5"), b"6.5", b"x",
    [1.5], (1.5,), [], numpy.array([1.5]), numpy.array(2.5), numpy.array(None, dtype=object), object(),
]


def filled_and_copied_objects(xp: ModuleType, size: int) -> list[tuple]:
    """``a.fill(value)`` and ``np.copyto(a, value)`` of values that are not numbers: converted as
    NumPy converts them (Shoal's ``fill(None)`` raised an internal BytecodeError at the next
    read), and ``a.fill([1.5])`` NumPy's ValueError (Shoal broadcast the list)."""

    def filled(dtype, value):
        a = (xp.arange(size) * 1).astype(dtype)
        a.fill(value)
        return xp.concatenate((a[:3], a[-2:]))

    def copied(dtype, value, casting):
        a = (xp.arange(size) * 1).astype(dtype)
        xp.copyto(a, value, casting=casting)
        return xp.concatenate((a[:3], a[-2:]))

    results = []
    for dtype in (numpy.float64, numpy.float32, numpy.complex128, numpy.int64, numpy.bool_):
        for value in FILL_VALUES:
            results.append(summarized(lambda dtype=dtype, value=value: filled(dtype, value)))
            for casting in ("unsafe", "same_kind"):
                results.append(summarized(lambda dtype=dtype, value=value, casting=casting: copied(dtype, value, casting)))
    results.append(summarized(lambda: filled(float, xp.zeros(3))))
    return results


def test_filling_with_none_and_other_objects_converts_as_numpy(snp_any):
    assert filled_and_copied_objects(snp_any, 40) == filled_and_copied_objects(numpy, 40)


def test_filling_with_none_and_other_objects_at_default_settings(snp_default):
    assert filled_and_copied_objects(snp_default, 600_000) == filled_and_copied_objects(numpy, 600_000)

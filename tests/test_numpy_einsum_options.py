"""``np.einsum`` beyond the plain subscripts string, against NumPy: the sublist form,
``dtype=`` and ``casting=``, ``out=`` (lazy or NumPy), ``optimize=`` and ``order=``, with NumPy's
errors for each. Natively: a ``ShoalFallbackWarning`` fails the test."""

from __future__ import annotations

from types import ModuleType

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy_fixtures import DIFFERENTIAL, arrays, check_same, needs_runtime

# (subscripts, operand shapes), spelled as sublists by ``_sublists``
FORMS = [
    ("ij,jk->ik", [(3, 4), (4, 5)]),
    ("ij,jk", [(3, 4), (4, 5)]),
    ("ij->ji", [(3, 4)]),
    ("ii->i", [(4, 4)]),
    ("ii", [(4, 4)]),
    ("ij->", [(3, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
    ("...ij,...jk->...ik", [(2, 3, 4), (1, 4, 5)]),
    ("...i->...", [(2, 3, 4)]),
    ("ij,jk,kl->il", [(2, 3), (3, 4), (4, 2)]),
    ("iZ,Zj->ij", [(2, 3), (3, 2)]),
    (",->", [(), ()]),
]


def _sublist(term: str) -> list[object]:
    items: list[object] = []
    rest = term
    while rest:
        if rest.startswith("..."):
            items.append(Ellipsis)
            rest = rest[3:]
            continue
        letter, rest = rest[0], rest[1:]
        items.append(ord(letter) - ord("A") if letter.isupper() else ord(letter) - ord("a") + 26)
    return items


def _sublists(subscripts: str) -> tuple[list[list[object]], list[object] | None]:
    inputs, arrow, output = subscripts.partition("->")
    return [_sublist(term) for term in inputs.split(",")], (_sublist(output) if arrow else None)


def _sublist_call(subscripts: str):
    terms, output = _sublists(subscripts)

    def call(xp, *values):
        arguments: list[object] = []
        for value, term in zip(values, terms):
            arguments += [value, term]
        if output is not None:
            arguments.append(output)
        return xp.einsum(*arguments)

    return call


numeric = st.sampled_from([np.dtype(n) for n in ("int8", "int64", "uint16", "float32", "float64", "complex128", "bool")])


@DIFFERENTIAL
@given(form=st.sampled_from(FORMS), dtype=numeric, data=st.data())
def test_sublist_form(snp: ModuleType, form, dtype, data) -> None:
    subscripts, shapes = form
    operands = [data.draw(arrays(dtype, shape, bound=9)) for shape in shapes]
    tolerance = 1e-4 if dtype == np.float32 else 1e-10
    check_same(snp, _sublist_call(subscripts), *operands, rtol=tolerance, atol=tolerance)


@pytest.mark.parametrize("dtype", [None, "float32", "float64", "complex128", "int64", "int8", "bool"])
@pytest.mark.parametrize("casting", ["no", "equiv", "safe", "same_kind", "unsafe"])
@pytest.mark.parametrize("inputs", ["int16", "float64", "mixed"])
def test_dtype_and_casting(snp: ModuleType, dtype, casting: str, inputs: str) -> None:
    left = (np.arange(12).reshape(3, 4) * 7 - 20).astype("float64" if inputs == "float64" else "int16")
    right = (np.arange(20).reshape(4, 5) % 6 - 2).astype("float64" if inputs != "int16" else "int16")
    check_same(snp, lambda xp, a, b: xp.einsum("ij,jk->ik", a, b, dtype=dtype, casting=casting), left, right, rtol=1e-5)
    check_same(snp, lambda xp, a: xp.einsum("ii->", a[:, :3], dtype=dtype, casting=casting), left, rtol=1e-5)


OUT_CASES = [
    ((3, 5), "float64"),
    ((3, 5), "float32"),
    ((3, 5), "complex128"),
    ((3, 5), "int64"),
    ((5, 3), "float64"),
    ((3, 5, 1), "float64"),
    ((15,), "float64"),
    ((1, 5), "float64"),
]


@pytest.mark.parametrize(("shape", "dtype"), OUT_CASES)
@pytest.mark.parametrize("casting", [None, "same_kind", "unsafe"])
def test_lazy_out(snp: ModuleType, shape, dtype: str, casting) -> None:
    options = {} if casting is None else {"casting": casting}
    left, right = np.arange(12.0).reshape(3, 4) / 3, np.arange(20.0).reshape(4, 5) - 7

    def call(xp, a, b, out):
        result = xp.einsum("ij,jk->ik", a, b, out=out, **options)
        assert result is out
        return out

    check_same(snp, call, left, right, np.full(shape, -1, dtype), rtol=1e-6)


def test_transposed_and_zero_dimensional_out(snp: ModuleType) -> None:
    value = np.arange(12.0).reshape(3, 4)

    def transposed(xp, a, out):
        assert xp.einsum("ij->ji", a, out=out.T) is not None
        return out

    check_same(snp, transposed, value, np.zeros((3, 4)))
    check_same(snp, lambda xp, a, out: (xp.einsum("ij->", a, out=out), out)[1], value, np.zeros(()))
    check_same(snp, lambda xp, a, out: xp.einsum("ij->", a, out=out), value, np.zeros((1,)))


def test_numpy_out_with_lazy_operands(snp: ModuleType) -> None:
    needs_runtime()
    left, right = np.arange(12.0).reshape(3, 4), np.arange(20.0).reshape(4, 5)
    out = np.zeros((3, 5), np.float32)
    result = snp.einsum("ij,jk->ik", snp.array(left), snp.array(right), out=out, casting="same_kind")
    assert result is out
    np.testing.assert_allclose(out, (left @ right).astype(np.float32))
    read_only = np.zeros((3, 5))
    read_only.flags.writeable = False
    with pytest.raises(ValueError):
        np.einsum("ij,jk->ik", left, right, out=read_only)
    with pytest.raises(ValueError):
        snp.einsum("ij,jk->ik", snp.array(left), snp.array(right), out=read_only)


@pytest.mark.parametrize("optimize", [False, True, "greedy", "optimal", ["einsum_path", (0, 1), (0, 1)]])
@pytest.mark.parametrize("order", ["K", "C", "F"])
def test_optimize_and_order(snp: ModuleType, optimize, order: str) -> None:
    operands = (np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4) - 5, np.arange(8.0).reshape(4, 2) / 7)
    check_same(snp, lambda xp, *vs: xp.einsum("ij,jk,kl->il", *vs, optimize=optimize, order=order), *operands, rtol=1e-10)


@pytest.mark.parametrize(
    "call",
    [
        lambda xp, a, b: xp.einsum(a, [0, 60], b, [1, 2]),
        lambda xp, a, b: xp.einsum(a, [0, -1], b, [1, 2]),
        lambda xp, a, b: xp.einsum(a, [0, "x"], b, [1, 2]),
        lambda xp, a, b: xp.einsum(a, [0, 1], b),
        lambda xp, a, b: xp.einsum(a, [0, 1], b, [2, 2]),
        lambda xp, a, b: xp.einsum(a, [0, 1, 2], b, [1, 2]),
        lambda xp, a, b: xp.einsum(a, [0, 1], b, [1, 2], [0, 3]),
        lambda xp, a, b: xp.einsum(a, [0, 1], b, [1, 2], [0, 0]),
        lambda xp, a, b: xp.einsum(a),
        lambda xp, a, b: xp.einsum("ij,jk->ik", a, b, dtype=np.float32),
        lambda xp, a, b: xp.einsum("ij,jk->ik", a, b, dtype="not a dtype"),
        lambda xp, a, b: xp.einsum("ij,jk->ik", a, b, casting="bogus"),
        lambda xp, a, b: xp.einsum("ij,jk->ik", a, b, order="Q"),
        lambda xp, a, b: xp.einsum("ij,jk->ik", a, b, optimize=["einsum_path", (0, 5)]),
        lambda xp, a, b: xp.einsum("ij,jk->ik", a, b, unknown=1),
        lambda xp, a, b: xp.einsum("ij,jk->ik", a, b, out=[0.0]),
        lambda xp, a, b: xp.einsum("ij,jk->ik", a, b, out=np.zeros((2, 5))),
        lambda xp, a, b: xp.einsum("ij,jk->ik", a, b, out=np.zeros((2, 4), np.float32)),
        lambda xp, a, b: xp.einsum("ij,jk->ik", a, b, out=np.zeros((2, 4), np.int64), casting="same_kind"),
        lambda xp, a, b: xp.einsum("ij,jk->ik", a, b, out=np.zeros((2, 4, 1))),
        lambda xp, a, b: xp.einsum("ij->", a, out=np.zeros((1,)), optimize=True),
    ],
)
def test_errors_are_numpys(snp: ModuleType, call) -> None:
    assert check_same(snp, call, np.ones((2, 3)), np.ones((3, 4))) is not None


def test_sublist_result_stays_lazy(snp: ModuleType) -> None:
    needs_runtime()
    a, b = snp.arange(6.0).reshape(2, 3), snp.arange(12.0).reshape(3, 4)
    result = snp.einsum(a, [0, 1], b, [1, 2], [0, 2])
    assert isinstance(result, snp.ndarray)
    np.testing.assert_allclose(np.asarray(result), np.arange(6.0).reshape(2, 3) @ np.arange(12.0).reshape(3, 4))

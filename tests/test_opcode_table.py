"""The opcode table declares every fact the engines use about an opcode, and docs/opcodes.md is
generated from it.

A compiled-kernel expression, a bool-safe loop or a combining operator for an opcode or ufunc
the table does not declare fails here; so does an identity or a combining ufunc that disagrees
with NumPy's own, and a partial/combined reduction on tiles that differs from the opcode's
reference implementation.
"""

from __future__ import annotations

import numpy as np
import pytest

from shoal.bytecode import BY_NAME, OPCODES, GroupOp, Kind, spec
from shoal.bytecode.opcode_docs import DOCS_PATH, main, render
from shoal.engine.node.codegen import kernel_source
from shoal.engine.node.codegen.templates import COMBINE_OPERATORS, EXPRESSIONS
from shoal.engine.node.run.tiles import combine, partial_reduce


def test_every_kernel_expression_is_an_opcode_the_table_declares_fusible():
    undeclared = sorted(name for name in EXPRESSIONS if name not in BY_NAME or not spec(name).fuses)
    assert not undeclared, f"kernel expressions for opcodes the table does not declare fusible: {undeclared}"
    assert kernel_source._BOOL_SAFE <= set(EXPRESSIONS)


def test_every_combining_operator_belongs_to_a_fused_reduction_and_back():
    used = {spec(name).combine for name in GroupOp.FUSED_REDUCTION}
    assert set(COMBINE_OPERATORS) == used


@pytest.mark.parametrize("entry", [e for e in OPCODES if e.combine is not None], ids=lambda e: e.name)
def test_combine_and_identity_are_numpys(entry):
    assert entry.kind in (Kind.REDUCTION, Kind.SCAN)
    ufunc = getattr(np, entry.combine)
    assert isinstance(ufunc, np.ufunc) and ufunc.nin == 2 and BY_NAME[entry.combine].ufunc is ufunc
    if entry.identity is not None:
        assert entry.identity == ufunc.identity and type(entry.identity) is type(ufunc.identity)
    elif entry.name in GroupOp.SELECTING:
        assert ufunc.identity is None


@pytest.mark.parametrize("name", sorted(GroupOp.FUSED_REDUCTION | {"cumsum", "cumprod"}))
def test_an_empty_reduction_or_scan_starts_from_the_identity(name):
    entry = spec(name)
    if entry.identity is None:
        assert name in GroupOp.SELECTING
        return
    if entry.kind is Kind.SCAN:
        scan = getattr(np, f"cumulative_{name.removeprefix('cum')}")
        assert scan(np.zeros(0, int), include_initial=True)[0] == entry.identity
        return
    empty = np.zeros(0)
    expected = getattr(np, name)(empty) if name != "mean" else np.sum(empty)
    assert expected == entry.identity


@pytest.mark.parametrize("name", sorted(GroupOp.FUSED_REDUCTION))
@pytest.mark.parametrize("dtype", ["float64", "int32", "bool", "complex128"])
def test_tile_partials_and_their_combination_match_the_reference(name, dtype):
    if name in GroupOp.SELECTING and dtype == "complex128":
        return  # not fused (plan/fusible.py)
    rng = np.random.default_rng(7)
    values = (rng.standard_normal(40) * 3).astype(dtype)
    if dtype == "complex128":
        values = values + 1j * values[::-1]
    if name in GroupOp.LOGICAL:
        acc = np.dtype(bool)
    elif name in GroupOp.SELECTING:
        acc = values.dtype
    else:
        acc = np.result_type(values.dtype, np.float64 if dtype != "int32" else np.int64)
    partials = [partial_reduce(name, chunk, acc) for chunk in np.array_split(values, 4)]
    total = combine(name, partials)
    if name == "mean":
        total = total / values.size
    out = np.empty((), np.result_type(getattr(np, name)(values)))
    spec(name).reference([out], [values], {})
    np.testing.assert_allclose(np.asarray(total).astype(out.dtype), out, rtol=1e-12)


@pytest.mark.parametrize("name", sorted(GroupOp.FUSED_REDUCTION))
def test_the_code_generator_writes_every_fused_reduction(name):
    line = kernel_source._accumulate(name, "acc", "x", real=True)
    assert line.startswith("acc")
    assert kernel_source._identity(name, np.dtype(np.float64 if name not in GroupOp.LOGICAL else bool))


def test_groups_follow_the_columns():
    assert GroupOp.COPIES == {"copy", "fill"}
    assert GroupOp.ELEMENTWISE <= GroupOp.FUSED_ELEMENTWISE
    assert GroupOp.FUSED_ELEMENTWISE - GroupOp.ELEMENTWISE == GroupOp.COPIES
    assert GroupOp.FUSED_REDUCTION <= GroupOp.REDUCTION
    assert GroupOp.SELECTING | GroupOp.LOGICAL <= GroupOp.FUSED_REDUCTION


def test_the_opcode_document_is_current():
    assert DOCS_PATH.read_text(encoding="utf-8") == render(), "run python -m shoal.bytecode.opcode_docs --write"


def test_the_document_command_writes_and_checks(tmp_path, monkeypatch, capsys):
    target = tmp_path / "opcodes.md"
    monkeypatch.setattr("shoal.bytecode.opcode_docs.DOCS_PATH", target)
    assert main(["--check"]) == 1
    assert main(["--write"]) == 0
    assert target.read_text(encoding="utf-8") == render()
    assert main(["--check"]) == 0
    target.write_text(render().replace("`sum`", "`total`"), encoding="utf-8")
    assert main(["--check"]) == 1
    assert main(["--bogus"]) == 2
    capsys.readouterr()

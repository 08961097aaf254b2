"""The import rules of docs/architecture.md, checked on the source with a small AST walk.

* ``shoal/engine/blocks`` imports nothing of the node engine (the cluster manager uses it too).
* A node-engine stage imports only earlier stages and the node's shared modules; the stages in
  order are ``plan``, ``lower``, ``codegen``, ``compile``, ``run``, ``schedule``.
* Nothing in ``shoal/engine`` imports the NumPy frontend (``shoal/numpy``).
* No module of ``shoal/engine`` imports another's private names, and there are no import cycles.
Imports inside functions count as much as those at the top of a file.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
STAGES = ("plan", "lower", "codegen", "compile", "run", "schedule")
NODE = "shoal.engine.node"
NODE_SHARED = {f"{NODE}.keys", f"{NODE}.stats"}
MAX_LINES = 500


def _modules() -> dict[str, Path]:
    modules = {}
    for path in (ROOT / "shoal").rglob("*.py"):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        modules[".".join(parts)] = path
    return modules


MODULES = _modules()


def imports_of(module: str) -> list[tuple[str, str]]:
    """``(imported module, name)`` for every import in ``module`` (name "" for whole modules).

    ``from package import submodule`` counts as an import of the submodule only.
    """
    found = []
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        if isinstance(node, ast.Import):
            found += [(alias.name, "") for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                found.append((submodule, "") if submodule in MODULES else (node.module, alias.name))
    return [(target, name) for target, name in found if target == "shoal" or target.startswith("shoal.")]


def stage_of(module: str) -> int | None:
    parts = module.split(".")
    if module.startswith(NODE + ".") and len(parts) > 3 and parts[3] in STAGES:
        return STAGES.index(parts[3])
    return None


ENGINE = sorted(m for m in MODULES if m.startswith("shoal.engine"))


def test_the_rules_see_every_stage_and_the_block_layer():
    for stage in STAGES:
        assert any(stage_of(m) == STAGES.index(stage) for m in ENGINE), stage
    assert f"{NODE}.plan.plan" in MODULES and "shoal.engine.blocks.scheduler" in MODULES
    assert "shoal.engine.blocks.dependencies" in [t for t, _ in imports_of("shoal.engine.blocks.scheduler")]


@pytest.mark.parametrize("module", [m for m in ENGINE if m.startswith("shoal.engine.blocks")])
def test_the_block_layer_imports_no_node_engine(module):
    bad = [t for t, _ in imports_of(module) if t.startswith(NODE) or t.startswith("shoal.cluster")]
    assert not bad, f"{module} imports {bad}"


@pytest.mark.parametrize("module", [m for m in ENGINE if stage_of(m) is not None or m in NODE_SHARED])
def test_a_stage_imports_only_earlier_stages_and_shared_modules(module):
    own = stage_of(module)
    for target, _ in imports_of(module):
        if not target.startswith(NODE + ".") and target != NODE:
            continue
        if target in NODE_SHARED:
            continue
        theirs = stage_of(target)
        assert theirs is not None, f"{module} imports {target}, which belongs to no stage"
        assert own is not None and theirs <= own, f"{module} (stage {STAGES[own] if own is not None else 'shared'}) imports the later {target}"


@pytest.mark.parametrize("module", ENGINE)
def test_the_engine_imports_no_numpy_frontend(module):
    bad = [t for t, _ in imports_of(module) if t == "shoal.numpy" or t.startswith("shoal.numpy.")]
    assert not bad, f"{module} imports {bad}"


@pytest.mark.parametrize("module", ENGINE)
def test_no_module_imports_private_names_of_another(module):
    bad = [f"{t}.{name}" for t, name in imports_of(module) if name.startswith("_") and not name.startswith("__")]
    assert not bad, f"{module} imports private {bad}"


def test_the_engine_has_no_import_cycles():
    graph = {m: {t for t, _ in imports_of(m) if t in MODULES and t.startswith("shoal.engine")} for m in ENGINE}
    state: dict[str, int] = {}
    path: list[str] = []

    def visit(module: str) -> None:
        state[module] = 1
        path.append(module)
        for target in sorted(graph[module]):
            if state.get(target) == 1:
                cycle = [*path[path.index(target) :], target]
                raise AssertionError("import cycle: " + " -> ".join(cycle))
            if target not in state:
                visit(target)
        path.pop()
        state[module] = 2

    for module in ENGINE:
        if module not in state:
            visit(module)


@pytest.mark.parametrize("module", ENGINE)
def test_engine_files_stay_short(module):
    lines = MODULES[module].read_text().count("\n")
    assert lines <= MAX_LINES, f"{MODULES[module].relative_to(ROOT)} has {lines} lines"


def test_the_checks_catch_a_violation(tmp_path, monkeypatch):
    """A stage module that imports a later stage and a private name is reported."""
    bad = tmp_path / "bad.py"
    bad.write_text(f"from {NODE}.schedule.builder import Builder\nfrom {NODE}.codegen.templates import _x\n")
    monkeypatch.setitem(MODULES, f"{NODE}.plan.bad", bad)
    with pytest.raises(AssertionError, match="imports the later"):
        test_a_stage_imports_only_earlier_stages_and_shared_modules(f"{NODE}.plan.bad")
    with pytest.raises(AssertionError, match="imports private"):
        test_no_module_imports_private_names_of_another(f"{NODE}.plan.bad")

"""Shoal's settings: declared once, explicit > environment > default, clear errors, a current table."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from shoal import info, settings
from shoal.engine.node import NodeConfig, NodeEngine
from shoal.engine.node.compile.kernel_cache import CompileMode
from shoal.engine.node.config import Schedule

ROOT = Path(__file__).resolve().parent.parent
SHOAL = ROOT / "shoal"

BAD_TEXT = {settings.Kind.INTEGER: "lots", settings.Kind.FLAG: "maybe", settings.Kind.CHOICE: "sometimes"}


def test_the_readme_table_is_current():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert settings.markdown_table() in readme, "run `python -m shoal.settings --write-readme`"


def test_the_table_command_rewrites_only_the_table(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"before\n{settings.TABLE_BEGIN}\nold\n{settings.TABLE_END}\nafter\n")
    assert settings.main(["--write-readme", str(readme)]) == 0
    assert readme.read_text() == f"before\n{settings.markdown_table()}\nafter\n"


def test_every_variable_named_in_the_code_is_declared_once():
    declared = [entry.name for entry in settings.SETTINGS]
    assert len(declared) == len(set(declared))
    named = set()
    for path in [*SHOAL.rglob("*.py"), *(ROOT / "tests").glob("*.py")]:
        named.update(re.findall(r"\bSHOAL_[A-Z_]*[A-Z]\b", path.read_text(encoding="utf-8")))
    assert named - set(declared) == set()


def _environment_reads(path: Path) -> list[int]:
    """Lines of ``path`` that read the environment (``os.environ`` or ``os.getenv``) other than
    to copy it for a child process."""
    lines = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Attribute) and node.attr in ("environ", "getenv") and isinstance(node.value, ast.Name) and node.value.id == "os":
            lines.append(node.lineno)
    return lines


def test_no_component_reads_the_environment():
    engine = SHOAL / "engine"
    readers = {str(path.relative_to(ROOT)): _environment_reads(path) for path in engine.rglob("*.py")}
    assert {path: lines for path, lines in readers.items() if lines} == {}


def test_no_shoal_variable_is_read_outside_the_settings_module():
    pattern = re.compile(r"os\.(environ\.get|getenv|environ\[)\(?\s*[\"']SHOAL_")
    offenders = [str(path) for path in SHOAL.rglob("*.py") if path.name != "settings.py" and pattern.search(path.read_text(encoding="utf-8"))]
    assert offenders == []


def test_explicit_beats_environment_beats_default():
    environ = {"SHOAL_FLUSH_THRESHOLD": "64"}
    assert settings.FLUSH_THRESHOLD.value(environ={}) == 2048
    assert settings.FLUSH_THRESHOLD.value(environ=environ) == 64
    assert settings.FLUSH_THRESHOLD.value(8, environ=environ) == 8
    assert settings.FLUSH_THRESHOLD.value("9", environ=environ) == 9
    assert settings.FLUSH_THRESHOLD.value(environ={"SHOAL_FLUSH_THRESHOLD": ""}) == 2048


@pytest.mark.parametrize("declared", [entry for entry in settings.SETTINGS if entry.kind in BAD_TEXT], ids=lambda entry: entry.name)
def test_a_bad_value_is_an_error_naming_the_variable(declared):
    with pytest.raises(ValueError, match=declared.name):
        declared.value(environ={declared.name: BAD_TEXT[declared.kind]})


@pytest.mark.parametrize(("text", "value"), [("1", True), ("yes", True), (" ON ", True), ("0", False), ("off", False), ("False", False)])
def test_flags(text, value):
    assert settings.DUMP.value(environ={"SHOAL_DUMP": text}) is value


def test_integers_below_their_minimum_are_refused():
    with pytest.raises(ValueError, match="SHOAL_BLOCK_SIZE must be an integer of at least 1, got '0'"):
        settings.BLOCK_SIZE.value(environ={"SHOAL_BLOCK_SIZE": "0"})


def test_the_node_engine_gets_its_settings_through_its_configuration():
    environ = {"SHOAL_BLOCK_SIZE": "96", "SHOAL_COMPILE": "OFF", "SHOAL_SCHEDULE": "reverse", "SHOAL_NUM_THREADS": "3"}
    config = NodeEngine.configure(environ)
    assert config == NodeConfig(threads=3, block_size=96, compile=CompileMode.OFF, schedule=Schedule.REVERSE)
    assert NodeConfig.from_settings(environ, block_size=32).block_size == 32
    assert NodeConfig.from_settings({"SHOAL_BLOCK_SIZE": "bad"}, block_size=32).block_size == 32
    engine = NodeEngine(config)
    assert engine.block_elements == 96 and engine.threads == 3
    with pytest.raises(TypeError, match="no setting blocks"):
        NodeConfig.from_settings(environ, blocks=3)
    with pytest.raises(AttributeError):
        config.block_size = 5  # type: ignore[misc]


def test_a_default_node_engine_uses_the_declared_block_size():
    assert NodeEngine().block_elements == settings.BLOCK_SIZE.default == NodeConfig().block_size


def test_info_says_which_kernel_back_end_runs_and_why(monkeypatch):
    assert info.kernel_backend({"SHOAL_ENGINE": "reference"}).startswith("none: the bottom component is 'reference'")
    assert info.kernel_backend({"SHOAL_COMPILE": "off"}) == "NumPy tiles: SHOAL_COMPILE=off"
    assert info.kernel_backend({"SHOAL_COMPILE": "never"}).startswith("invalid: SHOAL_COMPILE must be one of")
    monkeypatch.setattr(info, "_version", lambda name: None)
    assert info.kernel_backend({}).startswith("NumPy tiles: Numba is not installed")


def test_info_prints_the_effective_settings():
    environment = {"PATH": "/usr/bin:/bin", "SHOAL_BLOCK_SIZE": "4096", "SHOAL_STACK": "pass", "SHOAL_ENGINE": "reference", "SHOAL_DIRECT_WORK": "few"}
    done = subprocess.run([sys.executable, "-m", "shoal", "info"], capture_output=True, text=True, env=environment, check=True, cwd=ROOT)
    lines = done.stdout.splitlines()
    assert "engine stack: pass:reference" in lines
    assert any(re.fullmatch(r"\s+SHOAL_BLOCK_SIZE\s+4096\s+\(environment\)", line) for line in lines)
    assert any(re.fullmatch(r"\s+SHOAL_FLUSH_THRESHOLD\s+2048\s+\(default\)", line) for line in lines)
    assert any(re.search(r"SHOAL_DIRECT_WORK\s+invalid: SHOAL_DIRECT_WORK must be an integer", line) for line in lines)

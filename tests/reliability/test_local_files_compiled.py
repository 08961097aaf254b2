"""The kernel cache end to end, with kernels compiled by Numba: a cache directory of another user
and tampered libraries are never loaded, the program's results stay right (kernels compiled in
memory, or again), and what the engine writes to the cache is private."""

from __future__ import annotations

import hashlib
import json
import os
import stat

import pytest
from engine_node_harness import run_both
from engine_node_recorder import Recorder

from reliability.local_files_helpers import (
    build_marker_library,
    give_to_other_user,
    marker_written,
    needs_root,
    plant,
    record,
)
from shoal.engine.node.compile import kernel_cache as compiler
from shoal.errors import ShoalUnsafeFileWarning

pytestmark = pytest.mark.full


def scaled_sums(rec: Recorder) -> list:
    """One fused kernel: exp, sqrt and a sum."""
    x = rec.array([0.5 + i / 700 for i in range(700)])
    y = rec.ufunc("add", rec.ufunc("exp", rec.ufunc("multiply", x, -0.5)), rec.ufunc("sqrt", x))
    return [y, rec.reduce("sum", y)]


@pytest.fixture
def marker(tmp_path, monkeypatch):
    path = tmp_path / "constructor-ran"
    monkeypatch.setenv("SHOAL_TEST_PLANTED_MARKER", str(path))
    return path


def compiled_libraries(tmp_path, monkeypatch) -> list:
    """Compile ``scaled_sums`` into a fresh cache; its kernels' libraries."""
    pytest.importorskip("numba")
    monkeypatch.setenv("SHOAL_CACHE_DIR", str(tmp_path / "cache"))
    engine = run_both(scaled_sums, block=128, compile="sync", exact=False)
    assert engine.compile_errors == []
    libraries = sorted((tmp_path / "cache" / "kernels").glob("*.so"))
    assert libraries
    return libraries


def run_loading_at_once(monkeypatch, compile: str = "background"):
    """Run ``scaled_sums`` where a cached library is worth loading before the first block."""
    monkeypatch.setattr(compiler, "NUMPY_SECONDS_PER_ELEMENT_STEP", 1.0)
    return run_both(scaled_sums, block=128, compile=compile, exact=False)


def test_a_cache_of_another_user_with_planted_kernels_runs_nothing_of_theirs(tmp_path, monkeypatch, marker):
    needs_root()
    names = [library.name for library in compiled_libraries(tmp_path, monkeypatch)]
    content = build_marker_library(tmp_path)
    planted = tmp_path / "their-cache" / "kernels"
    for name in names:  # the kernels' names and records: anyone can compute them
        plant(planted / name, content, record(content))
    give_to_other_user(planted.parent, planted, *planted.iterdir())
    before = sorted(planted.iterdir())
    monkeypatch.setenv("SHOAL_CACHE_DIR", str(planted.parent))
    try:
        with pytest.warns(ShoalUnsafeFileWarning, match="compiled in memory"):
            run_loading_at_once(monkeypatch)
        engine = run_loading_at_once(monkeypatch, compile="sync")  # warned once per process
    finally:
        assert not marker_written(marker), "a planted library's code ran"
    assert engine.compile_errors == [] and engine.last_stats.compiled_block_ops > 0
    assert sorted(planted.iterdir()) == before  # nothing written there either


def test_a_tampered_library_is_compiled_again_not_loaded(tmp_path, monkeypatch, marker):
    libraries = compiled_libraries(tmp_path, monkeypatch)
    content = build_marker_library(tmp_path)
    for library in libraries:
        size = library.stat().st_size
        assert len(content) <= size
        swapped = library.with_name("swapped")  # a new file: the old one may still be mapped here
        swapped.write_bytes(content + bytes(size - len(content)))  # the recorded size, another hash
        os.chmod(swapped, 0o600)
        os.replace(swapped, library)
    try:
        engine = run_loading_at_once(monkeypatch)
    finally:
        assert not marker_written(marker), "the tampered library's code ran"
    assert engine.compile_errors == []
    for library in libraries:
        description = json.loads(library.with_suffix(".json").read_text())
        assert hashlib.sha256(library.read_bytes()).hexdigest() == description["sha256"]  # written again


def test_what_the_engine_writes_to_the_cache_is_private(tmp_path, monkeypatch):
    compiled_libraries(tmp_path, monkeypatch)
    run_loading_at_once(monkeypatch)
    cache = tmp_path / "cache"
    written = ("*.py", "*.so", "*.json", "*.heat", "*.claim")
    for path in [cache, *cache.rglob("*")]:
        mode = stat.S_IMODE(path.lstat().st_mode)
        assert path.lstat().st_uid == os.geteuid(), path
        if path.is_dir():
            assert mode == 0o700, path
        elif any(path.match(pattern) for pattern in written):
            assert mode == 0o600, path
        else:
            assert mode & 0o022 == 0, path  # Numba's and Python's files, in the 0700 __pycache__

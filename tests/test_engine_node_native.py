"""Kernels as shared libraries: the same results as the reference, loaded without Numba."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest
from engine_node_harness import run_both
from engine_node_recorder import Recorder
from test_engine_node_deferred import heat_sweep, in_place_jacobi, shifted_update
from test_engine_node_differential import sample

from shoal.bytecode import View
from shoal.engine.node.compile import kernel_cache as compiler
from shoal.engine.node.compile import native


@pytest.fixture
def kernel_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("SHOAL_CACHE_DIR", str(tmp_path))
    return tmp_path / "kernels"


def prices(rec: Recorder) -> list:
    """exp, log, sqrt, where and two sums in one kernel, as in black_scholes.py."""
    spot = rec.array(np.linspace(10.0, 100.0, 700))
    years = rec.array(np.linspace(0.5, 2.0, 700))
    d1 = rec.ufunc("divide", rec.ufunc("log", rec.ufunc("divide", spot, 55.0)), rec.ufunc("sqrt", years))
    call = rec.ufunc("multiply", spot, rec.ufunc("exp", rec.ufunc("multiply", d1, -0.5)))
    put = rec.where(rec.ufunc("less", d1, 0.0), rec.ufunc("negative", call), call)
    return [d1, call, put, rec.reduce("sum", call), rec.reduce("mean", put)]


def integers_and_flags(rec: Recorder) -> list:
    """Wrapping int16 arithmetic, a bool array operand, float32, and bool and int results."""
    small = rec.array(sample(np.dtype(np.int16), 600))
    flags = rec.array(sample(np.dtype(np.bool_), 600))
    wrapped = rec.ufunc("multiply", rec.ufunc("add", small, 30000), 3)
    chosen = rec.where(flags, wrapped, small)
    singles = rec.ufunc("multiply", rec.array(np.linspace(-3, 3, 600, dtype=np.float32)), 0.1)
    return [chosen, singles, rec.reduce("any", flags), rec.reduce("all", flags), rec.reduce("sum", chosen), rec.reduce("max", singles)]


def escape_step(rec: Recorder) -> list:
    """One Mandelbrot step: complex arrays, complex constants (both widths), a complex sum."""
    grid = np.linspace(-2, 0.6, 500)[None, :] + 1j * np.linspace(-1.3, 1.3, 4)[:, None]
    c = rec.array(grid)
    z = rec.ufunc("multiply", c, 0.5 - 0.25j)
    real = View(z.base, np.dtype(np.float64), z.offset, z.shape, z.strides)
    imaginary = View(z.base, np.dtype(np.float64), z.offset + 8, z.shape, z.strides)
    inside = rec.ufunc("less_equal", rec.ufunc("add", rec.ufunc("square", real), rec.ufunc("square", imaginary)), 4.0)
    stepped = rec.where(inside, rec.ufunc("add", rec.ufunc("multiply", z, z), c), z)
    narrow = rec.ufunc("add", rec.array(grid.astype(np.complex64)), np.complex64(1 - 2j))
    return [stepped, narrow, rec.reduce("sum", stepped), rec.reduce("sum", inside)]


@pytest.mark.full
@pytest.mark.parametrize("program", [prices, integers_and_flags, escape_step])
def test_kernels_from_shared_libraries_match_the_reference(program, kernel_cache, monkeypatch):
    pytest.importorskip("numba")
    first = run_both(program, block=128, compile="sync", exact=False)  # compiles, writes libraries
    assert first.compile_errors == []
    assert list(kernel_cache.glob("*.so"))

    def no_numba_loading(path):
        raise AssertionError(f"{path} loaded through Numba")

    monkeypatch.setattr(compiler, "load_and_warm", no_numba_loading)
    monkeypatch.setattr(compiler, "NUMPY_SECONDS_PER_ELEMENT_STEP", 1.0)  # worth loading at once
    second = run_both(program, block=128, compile="background", exact=False)
    assert second.compile_errors == []
    stats = second.last_stats
    reductions = sum(1 for view in program(Recorder()) if view.shape == ())
    assert stats.compiled_block_ops > 0 and stats.block_ops - stats.compiled_block_ops == reductions  # folds


SCRIPT = textwrap.dedent(
    """
    import sys
    import numpy as np
    x = np.linspace(0.5, 2.0, 4_000_000)  # above the direct-execution bound
    y = np.exp(-0.5 * np.log(x) * x) + np.sqrt(x)
    print(repr(float(np.sum(y))), "numba" in sys.modules)
    """
)


@pytest.mark.full
def test_a_cached_kernel_runs_in_a_new_process_without_importing_numba(kernel_cache, tmp_path):
    pytest.importorskip("numba")
    script = tmp_path / "program.py"
    script.write_text(SCRIPT)
    plain = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, check=True, timeout=60)
    expected = float(plain.stdout.split()[0])
    environment = {**os.environ, "SHOAL_STATS": "1", "SHOAL_EAGER_THRESHOLD": "0"}
    runs = {}
    for mode in ("sync", "background"):
        done = subprocess.run([sys.executable, "-m", "shoal", str(script)], env={**environment, "SHOAL_COMPILE": mode},
                              capture_output=True, text=True, check=True, timeout=120)  # fmt: skip
        total, imported = done.stdout.split()
        stats = dict(item.split("=") for item in done.stderr.split("shoal-stats:")[1].split())
        runs[mode] = (float(total), imported, int(stats["compiled_block_ops"]))
    assert runs["sync"][2] > 0 and runs["background"][2] == runs["sync"][2]
    assert runs["background"][1] == "False"  # loaded with ctypes
    for total, _, _ in runs.values():
        assert total == pytest.approx(expected, rel=1e-12)


def test_a_library_built_for_another_cpu_or_damaged_is_not_loaded(tmp_path):
    library = native.library_path(tmp_path, "shoal_kernel_x")
    content = b"not a shared library"
    library.write_bytes(content)
    description = {"format": native.LIBRARY_FORMAT, "host": native.host_fingerprint(), "symbol": "entry", "params": ["l"],
                   "results": [], "size": len(content), "sha256": hashlib.sha256(content).hexdigest()}  # fmt: skip
    library.with_suffix(".json").write_text(json.dumps(description))
    assert native.available(library)
    assert native.load(library) is None  # damaged: the kernel falls back to Numba's cache
    description["host"] = "another cpu"
    library.with_suffix(".json").write_text(json.dumps(description))
    assert not native.available(library) and native.load(library) is None
    description.update(host=native.host_fingerprint(), params=["no such type"])
    library.with_suffix(".json").write_text(json.dumps(description))
    assert native.load(library) is None
    library.with_suffix(".json").write_text("[1, 2]")
    assert not native.available(library) and native.load(library) is None
    library.with_suffix(".json").unlink()
    assert not native.available(library) and native.load(library) is None


def test_build_directories_abandoned_by_a_killed_worker_are_removed(tmp_path):
    abandoned = tmp_path / f"{native.BUILD_PREFIX}killed"
    abandoned.mkdir()
    (abandoned / "kernel.o").write_bytes(b"half written")
    running = tmp_path / f"{native.BUILD_PREFIX}running"
    running.mkdir()
    old = time.time() - 2 * native.STALE_BUILD_SECONDS
    os.utime(abandoned, (old, old))
    native.remove_stale_builds(tmp_path)
    assert not abandoned.exists() and running.exists()


def strided_columns_update(rec: Recorder) -> list:
    """Every other column of a grid updated in place from the rows above and below it: a
    deferred write whose rows are strided, so ring rows are copied element by element."""
    grid = rec.array(np.random.default_rng(5).random((37, 30)))
    window = lambda dr: rec.index(grid, (slice(2 + dr, 35 + dr), slice(1, 29, 2)))  # noqa: E731
    total = rec.ufunc("multiply", rec.ufunc("add", rec.ufunc("add", window(-1), window(1)), window(0)), 0.5)
    rec.copy(window(0), total)
    rec.release(total)
    return [grid]


def heat_program(rec: Recorder) -> list:
    grid = rec.array(np.random.default_rng(6).random((41, 26)))
    work, delta, *temporaries = heat_sweep(rec, grid, (39, 24))
    rec.release(*temporaries)
    return [grid, work, delta]


@pytest.mark.full
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    ("program", "exact"),
    [
        (in_place_jacobi(3, shape=(41, 19)), True),
        (shifted_update(29, 11, [(-2, 1), (1, -1), (2, 0)], reverse=True), True),
        (strided_columns_update, True),
        (heat_program, False),  # its sum adds in another order
    ],
)
def test_stencils_from_shared_libraries_match_the_reference(program, exact, threads, kernel_cache, monkeypatch):
    """Library kernels called with arguments prepared once per view-block (rings of rows, held
    rows, partial last view-blocks, views that start mid-block), and replayed on new bases."""
    pytest.importorskip("numba")
    first = run_both(program, block=64, threads=threads, compile="sync", exact=exact, batches=2)
    assert first.compile_errors == [] and list(kernel_cache.glob("*.so"))
    monkeypatch.setattr(compiler, "load_and_warm", lambda path: pytest.fail(f"{path} loaded through Numba"))
    monkeypatch.setattr(compiler, "NUMPY_SECONDS_PER_ELEMENT_STEP", 1.0)  # worth loading at once
    second = run_both(program, block=64, threads=threads, compile="background", exact=exact, batches=3)
    assert second.compile_errors == [] and second.last_stats.replayed
    assert second.last_stats.compiled_block_ops >= 4 and second.last_stats.deferred_writes == second.last_stats.kernels


@pytest.mark.full
def test_a_library_on_disk_serves_once_the_numpy_path_has_spent_its_load_time(kernel_cache, monkeypatch):
    """Estimated too cheap to load (a view-block's NumPy calls cost more than its elements say),
    a structure runs on NumPy until the time it actually spent there pays for loading its
    library; the blocks after that are compiled. Before, it ran on NumPy in every run."""
    pytest.importorskip("numba")
    first = run_both(prices, block=128, compile="sync", exact=False)
    assert first.compile_errors == [] and list(kernel_cache.glob("*.so"))
    monkeypatch.setattr(compiler, "load_and_warm", lambda path: pytest.fail(f"{path} loaded through Numba"))
    monkeypatch.setattr(compiler, "NUMPY_SECONDS_PER_ELEMENT_STEP", 0.0)  # never worth loading by the estimate
    monkeypatch.setattr(compiler, "NATIVE_LOAD_SECONDS", 1e-9)  # any NumPy time pays for loading
    second = run_both(prices, block=128, threads=1, compile="background", exact=False, batches=2)
    assert second.compile_errors == []
    assert second.last_stats.compiled_block_ops > 0
    monkeypatch.setattr(compiler, "NATIVE_LOAD_SECONDS", 1e9)  # the NumPy time never pays for it
    third = run_both(prices, block=128, threads=1, compile="background", exact=False, batches=2)
    assert third.last_stats.compiled_block_ops == 0

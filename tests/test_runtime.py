"""The runtime: bases are released, batches flush at their threshold, settings are restored."""

from __future__ import annotations

import gc

import numpy
import pytest

import shoal
import shoal.numpy as np
from shoal import runtime


def test_long_loop_keeps_live_bases_flat() -> None:
    with runtime.configure(engine="reference", eager_threshold=0, flush_threshold=64) as rt:
        a = np.ones(100)
        for _ in range(2000):
            a = a * 0.5 + 1.0
        shoal.flush()
        gc.collect()
        shoal.flush()
        assert rt.engine.live_bases() <= 4
        assert rt.stats.bases_released >= 3990
        numpy.testing.assert_allclose(numpy.asarray(a), numpy.full(100, 2.0))


def test_batch_flushes_at_threshold_and_not_before() -> None:
    with runtime.configure(engine="reference", eager_threshold=0, flush_threshold=10, settled_threshold=0) as rt:
        a = np.zeros(50)
        for _ in range(4):
            a += 1
        assert rt.stats.flushes == 0
        for _ in range(10):
            a += 1
        assert rt.stats.flushes >= 1
        assert float(a[0]) == 14.0


def test_configure_restores_previous_runtime() -> None:
    outer = runtime.current()
    with runtime.configure(engine="reference", eager_threshold=5) as inner:
        assert runtime.current() is inner
        assert inner.eager_threshold == 5
    assert runtime.current() is outer


def test_unknown_engine_is_a_clear_error() -> None:
    with pytest.raises(ValueError, match="unknown Shoal engine 'nope'"):
        runtime.Runtime(engine="nope")


def test_bad_environment_setting_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SHOAL_EAGER_THRESHOLD", "lots")
    with pytest.raises(ValueError, match="SHOAL_EAGER_THRESHOLD must be an integer of at least 0"):
        runtime.Runtime(engine="reference")


def test_small_arrays_are_plain_numpy() -> None:
    with runtime.configure(engine="reference", eager_threshold=1000):
        small = np.ones(10)
        large = np.ones(2000)
        assert type(small) is numpy.ndarray
        assert type(large) is np.ndarray
        assert isinstance(small, np.ndarray) and isinstance(large, np.ndarray)
        assert type(small + 1) is numpy.ndarray
        mixed = small[:1] + large
        assert type(mixed) is np.ndarray


def _run_shoal(tmp_path, source: str, **env: str):
    import os
    import subprocess
    import sys

    program = tmp_path / "program.py"
    program.write_text(source)
    environment = {key: value for key, value in os.environ.items() if key != "SHOAL_ENGINE"}
    return subprocess.run(
        [sys.executable, "-m", "shoal", str(program)],
        capture_output=True, text=True, env={**environment, **env}, timeout=120, check=False,
    )


def test_small_arrays_create_no_engine_and_load_no_numpy_random(tmp_path) -> None:
    # The runner imports the engine's modules before the program starts (outside its timed
    # part); the engine itself, with its threads, is created with the first lazy array.
    run = _run_shoal(tmp_path, (
        "import sys\nimport numpy as np\nfrom shoal import runtime\n"
        "a = np.zeros((10, 10)) + 1\nprint(float(np.sum(a)))\n"
        "print(sorted(m for m in ('shoal.engine.node.engine', 'numpy.random', 'shoal.proxy') if m in sys.modules), runtime.current()._engine)\n"
        "big = np.ones(1_000_000) * 2\nprint(float(big.sum()), type(runtime.current()._engine).__name__)\n"
        "print(np.random.default_rng(1).integers(0, 10, 3).tolist())\n"
    ))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[:2] == ["100.0", "['shoal.engine.node.engine'] None"]
    assert lines[2] == "2000000.0 NodeEngine"  # a large array still runs on the node engine
    assert lines[3] == str(numpy.random.default_rng(1).integers(0, 10, 3).tolist())


def test_an_unknown_engine_name_still_fails_at_the_first_array(tmp_path) -> None:
    run = _run_shoal(tmp_path, "import numpy as np\nprint('before')\nnp.zeros(3)\nprint('after')\n", SHOAL_ENGINE="bogus")
    assert run.returncode == 1
    assert run.stdout == "before\n"
    assert "unknown Shoal engine 'bogus'" in run.stderr

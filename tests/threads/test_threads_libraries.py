"""limit_library_threads: observed BLAS thread use, restoring, overlapping limits."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import numexpr
import pytest
from threadpoolctl import threadpool_info

from shoal.threads import available_cores, library_pools, library_threads, limit_library_threads
from shoal.threads.libraries import BLAS_DEFAULTS, shorten_blas_spinning

from .helpers import busy_other_threads, matmul_work

pytestmark = pytest.mark.skipif(available_cores() < 2, reason="needs two cores to see BLAS threads")


def _blas_threads() -> list[int]:
    """Thread counts of NumPy's BLAS (SciPy, once another test imported it, brings its own)."""
    pools = [pool for pool in threadpool_info() if pool["user_api"] == "blas"]
    numpy_pools = [pool for pool in pools if f"{os.sep}numpy" in pool["filepath"]]
    return [pool["num_threads"] for pool in numpy_pools or pools]


def test_default_blas_uses_helper_threads_and_a_limit_of_one_stops_them():
    work = matmul_work()
    assert busy_other_threads(work) >= 1  # the control: OpenBLAS's own threads compute
    with limit_library_threads(1):
        assert _blas_threads() == [1]
        assert busy_other_threads(work) == 0
    assert busy_other_threads(work) >= 1


def test_limit_restores_blas_and_numexpr_settings():
    before_blas, before_numexpr = _blas_threads(), numexpr.get_num_threads()
    with limit_library_threads(1) as granted:
        assert granted == 1
        assert numexpr.get_num_threads() == 1
        assert library_threads() == 1
    assert _blas_threads() == before_blas
    assert numexpr.get_num_threads() == before_numexpr


def test_a_limit_only_lowers():
    before = _blas_threads()
    with limit_library_threads(before[0] + 10):
        assert _blas_threads() == before


def test_overlapping_limits_from_threads_apply_the_smallest_and_restore_at_the_end():
    before = _blas_threads()
    inner_entered, release_inner = threading.Event(), threading.Event()
    seen: list[list[int]] = []

    def other_thread() -> None:
        with limit_library_threads(1):
            inner_entered.set()
            release_inner.wait(10)

    with limit_library_threads(2):
        worker = threading.Thread(target=other_thread)
        worker.start()
        inner_entered.wait(10)
        seen.append(_blas_threads())
        release_inner.set()
        worker.join()
        seen.append(_blas_threads())  # the other limit ended first: back to ours, not the original
    assert seen == [[1], [min(2, before[0])]]
    assert _blas_threads() == before


@pytest.mark.parametrize("bad", [0, -1, 2.5, None, True])
def test_bad_limits_are_rejected(bad):
    with pytest.raises(ValueError, match="positive integer"), limit_library_threads(bad):
        pass


def test_library_pools_lists_openblas_and_numexpr():
    names = {pool.name for pool in library_pools()}
    assert {"openblas", "numexpr"} <= names


def test_shoal_shortens_blas_spinning_before_numpy_loads_unless_the_user_set_it(tmp_path):
    """OpenBLAS reads its spin time once, when it loads: ``python -m shoal`` sets it first, and a
    process that has loaded NumPy already is left alone."""
    program = tmp_path / "spin.py"
    program.write_text("import os\nprint(os.environ.get('OPENBLAS_THREAD_TIMEOUT'))\n")
    environment = {key: value for key, value in os.environ.items() if key != "OPENBLAS_THREAD_TIMEOUT"}

    def shown(extra: dict[str, str]) -> str:
        done = subprocess.run([sys.executable, "-m", "shoal", str(program)], capture_output=True, text=True, env={**environment, **extra}, timeout=120, check=True)
        return done.stdout.strip()

    assert shown({}) == BLAS_DEFAULTS["OPENBLAS_THREAD_TIMEOUT"]
    assert shown({"OPENBLAS_THREAD_TIMEOUT": "24"}) == "24"
    before = dict(os.environ)
    assert shorten_blas_spinning() is False  # NumPy is loaded in this process
    assert dict(os.environ) == before

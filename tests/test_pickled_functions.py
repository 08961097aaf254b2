"""NumPy's functions pickle under Shoal as under NumPy: a pool's ``map(np.linalg.inv, ...)``
pickles the function by name, and Shoal's own stand-ins must be found under theirs."""

from __future__ import annotations

import importlib
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy
import pytest

MODULES = ["numpy", "numpy.linalg", "numpy.fft", "numpy.random"]


def _public_functions(name: str) -> list[str]:
    module = importlib.import_module(name)
    found = []
    for attribute in getattr(module, "__all__", dir(module)):
        value = getattr(module, attribute, None)
        if attribute.startswith("_") or not callable(value) or isinstance(value, type):
            continue
        try:
            if pickle.loads(pickle.dumps(value)) is not value:  # a copy (bound methods of the global RandomState)
                continue
        except Exception:  # NumPy's own cannot be pickled: nothing to match
            continue
        found.append(attribute)
    return found


@pytest.mark.parametrize("name", MODULES)
def test_every_function_numpy_pickles_pickles_as_itself(name: str) -> None:
    import shoal.numpy as snp

    shoal_module = snp
    for part in name.split(".")[1:]:
        shoal_module = getattr(shoal_module, part)
    failed = []
    for attribute in _public_functions(name):
        value = getattr(shoal_module, attribute)
        try:
            if pickle.loads(pickle.dumps(value)) is not value:
                failed.append(f"{attribute}: another object")
        except Exception as error:
            failed.append(f"{attribute}: {type(error).__name__}: {error}")
    assert failed == []


def test_a_pool_maps_numpys_functions_as_under_python(tmp_path: Path) -> None:
    program = tmp_path / "pool_map.py"
    program.write_text(
        textwrap.dedent(
            """
            from multiprocessing import Pool
            import numpy as np

            matrices = [np.eye(3) * (k + 1) for k in range(4)]
            with Pool(2) as pool:
                inverses = pool.map(np.linalg.inv, matrices)
                determinants = pool.map(np.linalg.det, matrices)
                sizes = pool.map(np.random.default_rng, [1, 2])
            print([float(m.sum()) for m in inverses], [round(float(d), 6) for d in determinants], len(sizes))
            """
        )
    )
    runs = [subprocess.run([sys.executable, *way, str(program)], capture_output=True, text=True, timeout=120, check=False) for way in ((), ("-m", "shoal"))]
    assert [(run.returncode, run.stdout, run.stderr) for run in runs[1:]] == [(runs[0].returncode, runs[0].stdout, runs[0].stderr)]
    assert runs[0].returncode == 0


def test_numpys_own_names_are_kept_where_numpy_pickles_by_them() -> None:
    import shoal.numpy as snp

    assert snp.sum is numpy.sum  # NumPy's dispatcher, which takes Shoal's arrays

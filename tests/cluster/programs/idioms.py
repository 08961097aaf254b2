"""The NumPy idioms of ``tests/test_idioms_default_settings.py`` across the ranks: each is run by
NumPy itself and by the cluster (twice), and every result compared; exit status 1 names the
idioms that differ."""

import importlib.util
import sys
import warnings
from pathlib import Path

import numpy as np  # Shoal's under ``python -m shoal``

TESTS = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(TESTS))
spec = importlib.util.spec_from_file_location("idioms", TESTS / "test_idioms_default_settings.py")
idioms = importlib.util.module_from_spec(spec)
spec.loader.exec_module(idioms)
plain = idioms.numpy  # the module the idioms file imported: NumPy's own

warnings.simplefilter("ignore", category=Warning)  # fallbacks (histogram, unique) and "the cluster runs ..."
failed = []
for name in sorted(idioms.IDIOMS):
    inputs = idioms._inputs()
    expected = idioms.IDIOMS[name](plain, {key: value.copy() for key, value in inputs.items()})
    arrays = {key: np.array(value) for key, value in inputs.items()}
    try:
        for call in range(2):
            idioms._assert_same(idioms.IDIOMS[name](np, arrays), expected, f"{name}, call {call + 1}")
    except AssertionError as difference:
        failed.append(name)
        print(difference, file=sys.stderr)
print(f"{len(idioms.IDIOMS) - len(failed)} idioms gave NumPy's results; differed: {failed}")
sys.exit(1 if failed else 0)

"""Shared test configuration."""

import os
import warnings
import zlib
from collections.abc import Iterator

import pytest

# Every batch is verified and round-tripped through the wire format before it runs.
os.environ.setdefault("SHOAL_VERIFY", "1")

from engine_node_harness import STACKED
from numpy_fixtures import every_array_lazy, no_fallback, snp, snp_any, snp_default, snp_recorded  # noqa: F401  (fixtures for the NumPy tests)

QUICK_STACKED_SHARE = 4  # the quick tier runs one in this many of the stacked runs

# The task runtime fixture, the held-memory runtime (`lazy`, where a module has none of its own), and after every test a check that no task segment leaked.
pytest_plugins = ("task_fixtures", "held_fixtures")


def _stacked(item: pytest.Item) -> bool:
    """True if ``item`` runs through a stacked pass-through component (``pass:node``)."""
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return False
    return any(getattr(value, "stacked", False) is True or (isinstance(value, str) and value == STACKED) for value in callspec.params.values())


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Runs through a stacked pass-through component go to the full tier, except a fixed quarter of
    them (chosen by a hash of the test's id) that the quick tier keeps."""
    full = pytest.mark.full
    for item in items:
        if _stacked(item) and zlib.crc32(item.nodeid.encode()) % QUICK_STACKED_SHARE:
            item.add_marker(full)


@pytest.fixture(autouse=True)
def _runtime_warnings_fail_at_the_end() -> Iterator[None]:
    """A ``RuntimeWarning`` fails its test when the test ends instead of being raised at its line.

    Under an ``error`` filter for it Shoal computes every operation that may warn at the call,
    so that the exception comes from the user's line (``shoal.fp_warnings.raises``): with
    ``filterwarnings = error`` alone the suite would test that eager path instead of the lazy one.
    Tests of the ``error`` behaviour set the filter themselves.
    """
    with warnings.catch_warnings(record=True) as caught:
        warnings.filterwarnings("always", category=RuntimeWarning)
        yield
    runtime = [w for w in caught if issubclass(w.category, RuntimeWarning)]
    for w in caught:
        if not issubclass(w.category, RuntimeWarning):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno, source=w.source)
    if runtime:
        pytest.fail("RuntimeWarning: " + "; ".join(f"{w.filename}:{w.lineno}: {w.message}" for w in runtime))

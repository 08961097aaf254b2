"""Shared test configuration."""

import os
import zlib

import pytest

# Every batch is verified and round-tripped through the wire format before it runs.
os.environ.setdefault("SHOAL_VERIFY", "1")

from engine_node_harness import STACKED
from numpy_fixtures import snp, snp_any  # noqa: F401  (fixtures for the NumPy tests)

QUICK_STACKED_SHARE = 4  # the quick tier runs one in this many of the stacked runs

# The task runtime fixture, and after every test a check that no task segment leaked.
pytest_plugins = ("task_fixtures",)


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

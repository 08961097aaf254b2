"""Shared test configuration."""

import os

# Every batch is verified and round-tripped through the wire format before it runs.
os.environ.setdefault("SHOAL_VERIFY", "1")

from numpy_fixtures import snp, snp_any  # noqa: F401  (fixtures for the NumPy tests)

# The task runtime fixture, and after every test a check that no task segment leaked.
pytest_plugins = ("task_fixtures",)

"""Fixtures for the thread-budget tests."""

from __future__ import annotations

import pytest

from shoal.threads import smp


@pytest.fixture
def semaphore_path(tmp_path, monkeypatch):
    """A private semaphore file for the test; nothing is left in /dev/shm."""
    path = tmp_path / "tokens"
    monkeypatch.setenv("SHOAL_SEMAPHORE_PATH", str(path))
    return str(path)


@pytest.fixture
def smp_installed():
    """Install the pool patches for one test and always take them out again."""
    yield smp.install
    smp.uninstall()

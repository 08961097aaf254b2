"""The runtime of the held-memory tests: every array lazy, bases held after a short run."""

from __future__ import annotations

import pytest

from shoal import held, runtime


@pytest.fixture(params=["node", "reference"])
def lazy(monkeypatch, request):
    """Every array lazy; a base is held after 4 settled accesses in a row."""
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    monkeypatch.setattr(held, "HOLD_RUN", 4)
    with runtime.configure(engine=request.param, eager_threshold=0, flush_threshold=4096, settled_threshold=64) as rt:
        yield rt


@pytest.fixture
def held_on_node(monkeypatch):
    """Every array lazy on the node engine; a base is held after 4 settled accesses in a row."""
    monkeypatch.setenv("SHOAL_COMPILE", "off")
    monkeypatch.setattr(held, "HOLD_RUN", 4)
    with runtime.configure(engine="node", eager_threshold=0, flush_threshold=4096, settled_threshold=64) as rt:
        yield rt

"""The idioms of ``test_idioms_default_settings.py`` with the arrays on a live server, as
``SHOAL_REMOTE`` runs them (a 0-d result once came back 1-d)."""

from __future__ import annotations

import numpy
import pytest
from numpy_fixtures import needs_runtime
from test_idioms_default_settings import IDIOMS, _assert_same, _inputs


@pytest.mark.full
@pytest.mark.filterwarnings("ignore::shoal.errors.ShoalFallbackWarning")
def test_idioms_through_the_proxy_give_numpys_results(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each idiom twice through one client, against NumPy's result."""
    needs_runtime()
    from proxy_harness import client_for, engine, live_server

    import shoal.numpy as snp
    from shoal import runtime

    monkeypatch.setenv("SHOAL_VERIFY", "0")
    with live_server(engine("node"), memory_limit=4 << 30) as server:
        for name in sorted(IDIOMS):
            inputs = _inputs()
            expected = IDIOMS[name](numpy, {key: value.copy() for key, value in inputs.items()})
            with runtime.configure(engine=client_for(server, timeout=60)):
                lazy_inputs = {key: snp.array(value) for key, value in inputs.items()}
                for call in range(2):
                    _assert_same(IDIOMS[name](snp, lazy_inputs), expected, f"{name} through the proxy, call {call + 1}")

"""The report behind ``python -m shoal info``."""

from __future__ import annotations

from shoal.threads import available_cores
from shoal.threads.info import report


def test_report_shows_the_budget_mode_and_blas_pool(semaphore_path, monkeypatch):
    monkeypatch.setenv("SHOAL_COMPOSABILITY", "counting")
    text = report()
    assert f"cores available to this process   {available_cores()}" in text
    assert "mode                              counting" in text
    assert semaphore_path in text
    assert "openblas" in text


def test_report_names_a_bad_mode_instead_of_failing(semaphore_path, monkeypatch):
    monkeypatch.setenv("SHOAL_COMPOSABILITY", "nope")
    assert "invalid: SHOAL_COMPOSABILITY must be one of" in report()

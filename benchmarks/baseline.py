"""The environment of a benchmark's baseline: Shoal with other settings, or another tree."""

from __future__ import annotations


def with_settings(environment: dict[str, str], assignments: str) -> dict[str, str]:
    """``environment`` with ``NAME=VALUE[,NAME=VALUE]`` added: a ``--baseline`` of the benchmarks
    (another tree through ``PYTHONSAFEPATH=1,PYTHONPATH=<its worktree>``, or other settings)."""
    changed = dict(environment)
    for assignment in assignments.split(","):
        name, _, value = assignment.partition("=")
        changed[name.strip()] = value.strip()
    return changed

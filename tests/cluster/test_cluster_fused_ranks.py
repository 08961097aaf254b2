"""Ranks fuse their share of a batch that one process would fuse (the divided direct-work
threshold), with the same checksum at 1, 2 and 3 ranks in both latency modes."""

from __future__ import annotations

import functools

import pytest

from cluster.harness import EXAMPLES, environment, lines, run, run_numpy

pytestmark = pytest.mark.full

HEAT = (EXAMPLES / "heat_equation.py", "1000", "--max-iterations", "4")
DIRECT_WORK = "12000000"  # one process: a 1000² sweep (about 9 million) runs direct; a rank's half fuses


@functools.cache
def numpy_checksum() -> float:
    result = run_numpy(*HEAT)
    assert result.returncode == 0, result.stderr
    (value,) = lines(result.stdout, "checksum:")
    return float(value)


@functools.cache
def cluster(ranks: int, hiding: str) -> tuple[float, list[str]]:
    env = environment(SHOAL_COMPILE="sync", SHOAL_DIRECT_WORK=DIRECT_WORK, SHOAL_STATS="1", SHOAL_LATENCY_HIDING=hiding)
    result = run(ranks, *HEAT, env=env)
    assert result.returncode == 0, result.stderr
    (value,) = lines(result.stdout, "checksum:")
    return float(value), lines(result.stderr, "shoal-stats:")


def kernels(stats: list[str]) -> list[int]:
    return [int(field.split("=")[1]) for line in stats for field in line.split() if field.startswith("kernels=")]


def test_each_rank_fuses_its_share() -> None:
    _, stats = cluster(2, "on")
    counts = kernels(stats)
    assert len(counts) == 2
    assert all(count > 0 for count in counts), stats


def test_one_rank_keeps_the_threshold() -> None:
    _, stats = cluster(1, "on")
    assert kernels(stats) == [0]


@pytest.mark.parametrize("hiding", ["on", "off"])
@pytest.mark.parametrize("ranks", [1, 2, 3])
def test_same_checksum(ranks: int, hiding: str) -> None:
    value, _ = cluster(ranks, hiding)
    assert value == cluster(1, "on")[0]
    assert value == pytest.approx(numpy_checksum(), rel=1e-9, abs=0)

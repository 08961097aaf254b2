"""Programs with interiors first (shoal.cluster.interior_first) under ``mpiexec``: against
NumPy's arrays and warnings, and against the blocking mode's checksums."""

from __future__ import annotations

from pathlib import Path

import pytest

from cluster import harness

pytestmark = pytest.mark.full


@pytest.mark.parametrize("ranks", [2, 3])
def test_stencil_programs_with_interiors_first_give_numpys_results(ranks: int, tmp_path: Path) -> None:
    """The halo test's stencils (odd sizes, reaches of one and two rows, in place and into a
    second grid, reads beyond the halo, writes that are not element-wise between sweeps), every
    rank computing its interiors first, give NumPy's arrays bit for bit."""
    program = harness.PROGRAMS / "halo_stencils.py"
    expected = harness.numpy_arrays(program, tmp_path)
    env = harness.environment(SHOAL_CLUSTER_HALO="2", SHOAL_CLUSTER_HALO_SWEEPS="own", SHOAL_CLUSTER_INTERIOR_FIRST="on", SHOAL_STATS="1")
    result = harness.run(ranks, program, str(tmp_path / "got.npz"), env=env)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("halo sweeps: own rows, interior first") == ranks
    harness.assert_same_arrays(harness.load_arrays(tmp_path / "got.npz"), expected, frozenset({"jacobi_sum"}))


@pytest.mark.parametrize("ranks", [2, 3])
@pytest.mark.parametrize(("script", "arguments"), [("jacobi_stencil.py", ("200", "--iterations", "20")), ("heat_equation.py", ("60", "--epsilon", "0.1"))])
def test_interiors_first_give_the_blocking_modes_checksum(script: str, arguments: tuple[str, ...], ranks: int) -> None:
    """Jacobi and heat with interiors first (latency hiding) print the blocking mode's checksum,
    bit for bit: each element comes from the same instructions."""
    checksums = {}
    for hiding in ("on", "off"):
        env = harness.environment(SHOAL_CLUSTER_HALO_SWEEPS="own", SHOAL_CLUSTER_INTERIOR_FIRST="on", SHOAL_LATENCY_HIDING=hiding, SHOAL_STATS="1")
        result = harness.run(ranks, harness.EXAMPLES / script, *arguments, env=env)
        assert result.returncode == 0, result.stderr
        assert ("interior first" in result.stderr) == (hiding == "on")
        checksums[hiding] = harness.lines(result.stdout, "checksum:")
    assert checksums["on"] == checksums["off"]


def warnings_of(stderr: str) -> list[str]:
    return [line.split("edge_warnings.py")[1] for line in stderr.splitlines() if "Warning:" in line]


def test_a_warning_met_in_the_edge_rows_names_numpys_line() -> None:
    """An overflow met only in a row that reads the other rank's rows (so in the edges, which
    run after the interior) is reported at the line NumPy names: the edges' instructions keep
    their own positions in the batch, not the region's last one."""
    program = harness.PROGRAMS / "edge_warnings.py"
    plain = harness.run_numpy(program)
    assert plain.returncode == 0, plain.stderr
    expected = warnings_of(plain.stderr)
    assert expected == [":14: RuntimeWarning: overflow encountered in multiply"]
    result = harness.run(2, program, env=harness.environment(SHOAL_CLUSTER_HALO_SWEEPS="own", SHOAL_CLUSTER_INTERIOR_FIRST="on"))
    assert result.returncode == 0, result.stderr
    assert warnings_of(result.stderr) == expected
    assert result.stdout == plain.stdout

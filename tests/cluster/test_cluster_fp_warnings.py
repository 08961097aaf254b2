"""NumPy's floating-point warnings and errors for batches run across MPI ranks.

Every rank notes the conditions its pieces met; rank 0 gathers, checks and combines the notes and
warns at the recording lines (``shoal/cluster/fp_notes.py``). ``fp_warning_program.py`` at 2
ranks (every array distributed) against NumPy, line by line, in every mode and several filters;
the cluster's own fallback warnings (``ShoalFallbackWarning``) are left out of the comparison.
Notes another rank sends are checked before use.
"""

from __future__ import annotations

import subprocess
import sys

import pytest
from test_numpy_fp_warnings import MODES, PROGRAM

from cluster.harness import PROGRAMS, run
from shoal.bytecode import Batch, Instruction
from shoal.cluster.fp_notes import RankNotes
from shoal.engine import fp_signals

# Not "error": the cluster's own fallback warning (reductions gathered at rank 0) would be one.
ACTIONS = ["default", "always", "once"]


def shown(stdout: str) -> list[str]:
    return [line for line in stdout.splitlines() if line[:2] in ("W ", "E ", "ch") and "ShoalFallbackWarning" not in line]


@pytest.mark.full
@pytest.mark.timeout(300)
@pytest.mark.parametrize("action", ACTIONS)
@pytest.mark.parametrize("mode", MODES)
def test_program_at_two_ranks_warns_as_numpy(mode: str, action: str) -> None:
    plain = subprocess.run([sys.executable, str(PROGRAM), mode, action], capture_output=True, text=True, timeout=100)
    assert plain.returncode == 0, plain.stderr
    expected = shown(plain.stdout)
    result = run(2, PROGRAM, mode, action, timeout=240)  # 67 s seen on the loaded machine
    assert result.returncode == 0, result.stderr[-4000:]
    assert shown(result.stdout) == expected
    assert any(line.startswith(("W ", "E ")) for line in expected) or mode == "errstate-all-ignore"


@pytest.mark.full
@pytest.mark.timeout(300)
@pytest.mark.parametrize("ranks", [2, 3])
def test_a_condition_met_where_ranks_merge_partial_sums_is_named_as_numpy_names_it(ranks: int) -> None:
    """The ranks merge their partial sums element-wise; the note said "... encountered in add"
    where NumPy's reduction says "... encountered in reduce"."""
    program = PROGRAMS / "merge_warnings.py"
    plain = subprocess.run([sys.executable, str(program)], capture_output=True, text=True, timeout=100)
    assert plain.returncode == 0, plain.stderr
    result = run(ranks, program, timeout=240)
    assert result.returncode == 0, result.stderr[-4000:]
    assert shown(result.stdout) == shown(plain.stdout)
    assert sum(line.startswith("W ") for line in shown(plain.stdout)) == 3


class FakeSession:
    """The collectives of two ranks, seen from rank 0; the other rank's notes are ``theirs``."""

    def __init__(self, theirs: str | None) -> None:
        self.theirs = theirs

    def gather_text(self, text: str | None) -> list[str | None]:
        return [text, self.theirs]


def rank_zero(theirs: str | None) -> tuple[RankNotes, fp_signals.Watch, list[str | None]]:
    batch = Batch(instructions=[Instruction("release", (), ()) for _ in range(3)])
    record = fp_signals.watch(batch, fp_signals.DIVIDE | fp_signals.INVALID)
    notes = RankNotes(FakeSession(theirs), 0)
    notes.begin(batch, notes.claim(batch))
    notes.planned([], [0, 0, 0])
    problem = notes.finish()
    return notes, record, [problem]


@pytest.mark.parametrize(
    "theirs",
    ["3 1 log\n", "0 1 log", "0 1 LOG\n", "x\n", "0 1 log\n" * 9, "0 1 l\u00f6g\n"],
)
def test_rank_zero_refuses_malformed_notes_and_names_the_rank(theirs: str) -> None:
    _, record, (problem,) = rank_zero(theirs)
    assert problem is not None and problem.startswith("rank 1 sent malformed floating-point notes")
    assert record.done and record.notes == []


def test_notes_of_the_ranks_are_checked_combined_and_filtered() -> None:
    _, record, (problem,) = rank_zero("2 1 divide\n1 8 sqrt\n1 2 exp\n")
    assert problem is None and record.done
    positions = {id(instruction): n for n, instruction in enumerate(record.batch.instructions)}
    got = [(positions[id(instruction)], message) for instruction, message in record.notes]
    assert got == [(2, "divide by zero encountered in divide"), (1, "invalid value encountered in sqrt")]  # overflow unwatched


def test_an_unknown_condition_from_rank_zero_stops_the_batch() -> None:
    notes = RankNotes(FakeSession(None), 1)
    with pytest.raises(ValueError, match="unknown floating-point conditions"):
        notes.begin(Batch(), 0x30)


def test_pieces_are_named_by_the_instruction_they_were_planned_from() -> None:
    from shoal.cluster.plan import Op

    ops = [Op("compute", instructions=[Instruction("add", (), ())], positions=(position,)) for position in (0, 0, 2, 2)]  # instruction 1 planned no operation here
    notes = RankNotes(FakeSession(None), 1)
    notes.begin(Batch(instructions=[Instruction("release", (), ()) for _ in range(3)]), fp_signals.DIVIDE)
    notes.planned(ops)
    assert [notes._sources[id(op.instructions[0])] for op in ops] == [0, 0, 2, 2]

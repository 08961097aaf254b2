"""A long batch's repeated loop iterations sent as references (``shoal/cluster/alike.py``; no MPI).

Rank 0 cuts a loop's batch into iterations and sends each iteration that repeats an earlier one
as that iteration's number, its bases and its constants. Another rank must rebuild exactly the
batch rank 0 holds, cut it where rank 0 did, plan what cutting it afresh plans, verify it with
the verdicts and messages of full verification, and refuse every malformed command.
"""

from __future__ import annotations

import importlib
import struct

import pytest

from shoal.bytecode import BaseDecl, Batch, BytecodeError, Const, verify
from shoal.cluster import alike, segments, split_plans
from shoal.cluster.flush import Flusher
from shoal.cluster.plan import Planner
from shoal.engine.component import Component
from tests.cluster.test_cluster_plan_cache import F8, Ids, creation, described, state
from tests.cluster.test_cluster_split_plans import SWEEPS, long_loop, planned, planners, planning

verify_module = importlib.import_module("shoal.bytecode.verify")  # the package exports the function under the module's name


def prepared() -> tuple[Planner, Batch, list[int]]:
    """Rank 0's planner after creating a grid, and a long loop over it with where it cuts it."""
    root, _, _ = planners(1, 2, 1)
    ids = Ids()
    grid = ids()
    first = creation(grid, 1)
    planned(root, first, root.keyed(first))
    batch = long_loop(grid, ids, 0.1)
    parts = segments.split(batch, root.new_layouts)
    assert parts is not None and len(parts) >= SWEEPS // 2
    return root, batch, [start for start, _ in parts]


def command(batch: Batch, starts: list[int]) -> tuple[bytes, list[int]]:
    encoded = alike.encode(batch, starts)
    assert encoded is not None
    payload, structure, repeated = encoded
    assert repeated >= len(batch.instructions) // 2
    return payload, structure


def test_a_loop_batch_is_rebuilt_exactly_with_its_cuts() -> None:
    _, batch, starts = prepared()
    payload, structure = command(batch, starts)
    rebuilt, found, origins = alike.decode(payload, structure)
    assert rebuilt.bases == batch.bases
    assert rebuilt.instructions == batch.instructions
    assert found == starts
    assert sum(origin >= 0 for origin in origins) >= len(batch.instructions) // 2
    assert all(origin < position for position, origin in enumerate(origins))
    constants = [value for instruction in rebuilt.instructions for value in instruction.inputs if isinstance(value, Const)]
    assert {0.1 + step / 128 for step in range(SWEEPS)} <= {value.value for value in constants}
    assert len(payload) < len(alike.dumps(batch)) / 2


def test_a_batch_of_no_repeated_iteration_goes_whole() -> None:
    _, batch, starts = prepared()
    assert alike.encode(batch, [0]) is None
    assert alike.encode(batch, [0, starts[1]]) is None  # one iteration, then all the others


def test_the_rebuilt_batch_cut_where_rank_0_cut_it_plans_what_cutting_it_afresh_plans() -> None:
    for rank in (1, 2):
        root, here, afresh = planners(rank, 3, 1)
        ids = Ids()
        grid = ids()
        for planner in (root, here, afresh):
            first = creation(grid, 1)
            planned(planner, first, planner.keyed(first))
        batch = long_loop(grid, ids, 0.1)
        parts = segments.split(batch, root.new_layouts)
        assert parts is not None
        rebuilt, starts, _ = alike.decode(*command(batch, [start for start, _ in parts]))
        cut = split_plans.plan_parts(here, rebuilt, here.keyed(rebuilt), planning(here), starts)  # type: ignore[arg-type]
        assert cut is not None
        assert described([op for _, ops, _ in cut for op in ops]) == described(planned(afresh, batch, None))
        assert state(here) == state(afresh)


def test_verifying_a_rebuilt_batch_compares_its_repeats_with_what_they_repeat(monkeypatch: pytest.MonkeyPatch) -> None:
    root, batch, starts = prepared()
    rebuilt, _, origins = alike.decode(*command(batch, starts))
    checked: list[int] = []
    full = verify_module._Verifier._instruction

    def counting(self: object, index: int, instruction: object) -> None:
        checked.append(index)
        full(self, index, instruction)  # type: ignore[arg-type]

    monkeypatch.setattr(verify_module._Verifier, "_instruction", counting)
    verify(rebuilt, root.decls, alike=origins)
    repeats = [position for position, origin in enumerate(origins) if origin >= 0 and rebuilt.instructions[position].op != "release"]
    assert repeats and not set(repeats) & set(checked)
    checked.clear()
    verify(rebuilt, root.decls)
    assert len(checked) == len(rebuilt.instructions)


def _retargeted(batch: Batch, starts: list[int], old: int, new: int) -> tuple[Batch, list[int]]:
    """The batch rebuilt from a command in which the last iteration names base ``new`` where it
    named ``old``."""
    payload, structure = command(batch, starts)
    last = len(structure) - 1 - structure[::-1].index(old)
    changed = [*structure[:last], new, *structure[last + 1 :]]
    rebuilt, _, origins = alike.decode(payload, changed)
    return rebuilt, origins


@pytest.mark.parametrize("target", ["released", "smaller", "unknown"])
def test_a_repeat_over_a_base_it_may_not_use_gets_full_verifications_verdict(target: str) -> None:
    root, batch, starts = prepared()
    grid = batch.instructions[starts[-1]].inputs[0].base  # type: ignore[union-attr]
    if target == "released":
        new = next(instruction.attr("base") for instruction in batch.instructions[: starts[-1]] if instruction.op == "release")
    elif target == "smaller":
        new = 10**6
        batch.bases.append(BaseDecl(new, F8, 4))
    else:
        new = 10**6 + 1
    rebuilt, origins = _retargeted(batch, starts, grid, new)
    with pytest.raises(BytecodeError) as plain:
        verify(rebuilt, root.decls)
    with pytest.raises(BytecodeError) as compared:
        verify(rebuilt, root.decls, alike=origins)
    assert str(compared.value) == str(plain.value)


def _first_repeat(structure: list[int]) -> int:
    """Where the first iteration sent as a repeat begins in a command's structure."""
    position = 1
    while structure[position] == alike.FULL:
        position += 2
    return position


def _malformed(batch: Batch, starts: list[int], how: str) -> tuple[bytes, list[int]]:
    payload, structure = command(batch, starts)
    at = _first_repeat(structure)
    iteration = (at - 1) // 2  # every iteration before it was sent in full
    named = structure[at + 1]
    order = structure[at + 2 : at + 2 + named]
    rest = structure[at + 2 + named :]
    if how == "one iteration":
        return payload, [1, *structure[1:]]
    if how == "a later iteration":
        return payload, [*structure[:at], iteration + 1, *structure[at + 1 :]]
    if how == "itself":
        return payload, [*structure[:at], iteration, *structure[at + 1 :]]
    if how == "a base fewer":
        return payload, [*structure[: at + 1], named - 1, *order[:-1], *rest]
    if how == "a base twice":
        return payload, [*structure[: at + 2], order[0], order[0], *order[2:], *rest]
    if how == "cut short":
        return payload, structure[:-1]
    if how == "an integer more":
        return payload, [*structure, 7]
    if how == "a full iteration too long":
        return payload, [structure[0], -1, 10**6, *structure[3:]]
    if how == "constants cut short":
        return payload[:-4], structure
    if how == "bytecode cut short":
        (length,) = struct.unpack_from("<Q", payload)
        return struct.pack("<Q", length - 16) + payload[8:], structure
    if how == "a length past the end":
        return struct.pack("<Q", len(payload)) + payload[8:], structure
    if how == "no constants":
        (length,) = struct.unpack_from("<Q", payload)
        return payload[: 8 + length], structure
    if how == "a byte more":
        return payload + b"\x00", structure
    raise AssertionError(how)


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("one iteration", "of 1 iterations"),
        ("a later iteration", "not an earlier one"),
        ("itself", "not an earlier one"),
        ("a base fewer", "bases for iteration"),
        ("a base twice", "a base twice"),
        ("cut short", "ends before"),
        ("an integer more", "more integers"),
        ("a full iteration too long", "instructions, with"),
        ("constants cut short", "malformed constant"),
        ("bytecode cut short", "truncated|bytes"),
        ("a length past the end", "announced"),
        ("no constants", "constant .* is missing"),
        ("a byte more", "bytes more than"),
    ],
)
def test_a_malformed_alike_command_is_refused(how: str, message: str) -> None:
    _, batch, starts = prepared()
    payload, structure = _malformed(batch, starts, how)
    with pytest.raises((ValueError, BytecodeError), match=message):
        alike.decode(payload, structure)


def test_a_rank_gathers_replayed_iterations_naming_what_they_repeat() -> None:
    """The node-engine batch a flush gathers names, for each replayed computation, the one of
    the same template before it, and verification with those names agrees with full verification."""
    root, batch, starts = prepared()
    decls = dict(root.decls)
    parts = split_plans.plan_parts(root, batch, root.keyed(batch), planning(root), starts)  # type: ignore[arg-type]
    assert parts is not None
    ops = [op for _, planned_ops, _ in parts for op in planned_ops if op.kind == "compute" and not op.needs]
    assert sum(op.model is not None for op in ops) >= len(ops) // 2

    class Caught(Component):
        name = "caught"

        def __init__(self) -> None:
            self.batches: list[Batch] = []

        @classmethod
        def configure(cls, environ: object = None) -> None:
            return None

        def execute(self, gathered: Batch) -> None:
            self.batches.append(gathered)

        def fetch(self, view: object) -> None:
            raise AssertionError("nothing is read")

        def shutdown(self) -> None:
            return None

    caught = Caught()
    flusher = Flusher(caught, None, 0, True, {})
    for op in ops:
        flusher._add_compute(op)
    flusher.submit_batch()
    (gathered,) = caught.batches
    repeats = gathered.repeats
    assert repeats is not None and len(repeats) == len(gathered.instructions)
    assert sum(model >= 0 for model in repeats) >= len(repeats) // 3
    for position, model in enumerate(repeats):
        if model >= 0:
            assert model < position and gathered.instructions[model].op == gathered.instructions[position].op
    local = {decl.id: decl for decl in gathered.bases}
    known = {root.local[base]: BaseDecl(root.local[base], decl.dtype, decl.size) for base, decl in decls.items() if base in root.local}
    verify(Batch(bases=list(local.values()), instructions=gathered.instructions), known, alike=repeats)

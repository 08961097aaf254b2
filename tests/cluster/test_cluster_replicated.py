"""Small bases that come with data and that no instruction of their batch writes are kept whole on
every rank (``shoal.cluster.declared_layouts``): each piece reads them where it runs, without a
message from rank 0, until an instruction writes them, after which they are rank 0's alone."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

from cluster.harness import PROGRAMS, environment, load_arrays, numpy_arrays, run
from shoal.bytecode import BaseDecl, Batch, Const, Instruction, View, make_attrs
from shoal.cluster.declared_layouts import declared_layouts
from shoal.cluster.layout import everywhere, whole_on
from shoal.cluster.plan import Op, PlanConfig, Planner

F8 = np.dtype("f8")
ROWS, COLUMNS = 40, 30
TAGS = 1000
FIELD, SMALL, OUT, LATER = 1, 2, 3, 4
PROGRAM = PROGRAMS / "small_constants.py"
PRODUCT_ATOL = 8 * np.finfo(np.float64).eps
MESSAGES = re.compile(r"rank (\d+)  \S+  (\d+)/(\d+)")


def config(replicate_bytes: int = 1 << 12) -> PlanConfig:
    return PlanConfig(min_bytes=1024, replicate_bytes=replicate_bytes, cache_size=8)


def grid(base: int) -> View:
    return View(base, F8, 0, (ROWS, COLUMNS), (COLUMNS * 8, 8))


def across_rows(base: int) -> View:
    """The small base, a row of COLUMNS, repeated down the grid's rows (``small[None, :]``)."""
    return View(base, F8, 0, (ROWS, COLUMNS), (0, 8))


def first_batch(written: bool = False) -> Batch:
    """``out = field * small[None, :]`` (``small *= 2`` first if ``written``), field and small
    arriving with their data."""
    instructions = [Instruction("multiply", (View(SMALL, F8, 0, (COLUMNS,), (8,)),), (View(SMALL, F8, 0, (COLUMNS,), (8,)), Const(2.0)))] if written else []
    instructions.append(Instruction("multiply", (grid(OUT),), (grid(FIELD), across_rows(SMALL))))
    return Batch(
        bases=[BaseDecl(FIELD, F8, ROWS * COLUMNS), BaseDecl(SMALL, F8, COLUMNS), BaseDecl(OUT, F8, ROWS * COLUMNS)],
        instructions=instructions,
        data={FIELD: np.arange(ROWS * COLUMNS, dtype=F8), SMALL: np.linspace(0.5, 1.5, COLUMNS)},
    )


def writing_batch() -> Batch:
    """``small *= 2; later = field * small[None, :]; del later``: a write of the small base, then a read."""
    small = View(SMALL, F8, 0, (COLUMNS,), (8,))
    return Batch(
        bases=[BaseDecl(LATER, F8, ROWS * COLUMNS)],
        instructions=[
            Instruction("multiply", (small,), (small, Const(2.0))),
            Instruction("multiply", (grid(LATER),), (grid(FIELD), across_rows(SMALL))),
            Instruction("release", (), (), make_attrs(base=LATER)),
        ],
    )


def messages(ops: list[Op]) -> list[str]:
    return [op.kind for op in ops if op.kind != "compute"]


def test_small_data_is_kept_on_every_rank_unless_its_batch_writes_it() -> None:
    layouts = declared_layouts(first_batch(), config(), 2, {})
    assert everywhere(layouts[SMALL])
    assert layouts[FIELD].distributed and not everywhere(layouts[FIELD])
    assert not everywhere(layouts[OUT])  # no data: laid out as its operands are
    assert declared_layouts(first_batch(written=True), config(), 2, {})[SMALL] == whole_on(0, 2, COLUMNS, 8)
    assert declared_layouts(first_batch(), config(replicate_bytes=0), 2, {})[SMALL] == whole_on(0, 2, COLUMNS, 8)
    assert declared_layouts(first_batch(), config(replicate_bytes=COLUMNS * 8 - 1), 2, {})[SMALL] == whole_on(0, 2, COLUMNS, 8)
    assert not everywhere(declared_layouts(first_batch(), config(), 1, {})[SMALL])


@pytest.mark.parametrize("ranks", [2, 3])
def test_pieces_read_a_base_kept_everywhere_without_messages(ranks: int) -> None:
    for rank in range(ranks):
        planner = Planner(rank, ranks, config(), TAGS)
        ops = planner.plan(first_batch())
        assert messages(ops) == []
        local = planner.local[SMALL]
        held = [op.data[local] for op in ops if local in op.data]
        assert len(held) == 1 and np.array_equal(held[0], np.linspace(0.5, 1.5, COLUMNS))  # the whole of it
        products = [instruction for op in ops for instruction in op.instructions if instruction.op == "multiply"]
        assert products and all(instruction.inputs[1].base == local for instruction in products)
        other = Planner(rank, ranks, config(replicate_bytes=0), TAGS)
        assert messages(other.plan(first_batch())) == (["send"] * (ranks - 1) if rank == 0 else ["receive"])  # kept on rank 0


def test_a_write_makes_the_base_rank_0s_alone() -> None:
    for rank in range(2):
        planner = Planner(rank, 2, config(), TAGS)
        planner.plan(first_batch())
        kept = planner.cache.hits
        ops = planner.plan(writing_batch())
        assert planner.layouts[SMALL] == whole_on(0, 2, COLUMNS, 8)
        assert planner.template is None  # a replay would not make it rank 0's alone again
        assert messages(ops) == (["send"] if rank == 0 else ["receive"])  # rank 1 reads rank 0's new values
        writes = [instruction for op in ops for instruction in op.instructions if instruction.outputs and instruction.outputs[0].base == planner.local[SMALL]]
        assert len(writes) == (1 if rank == 0 else 0)
        planner.plan(writing_batch())  # the same batch again: planned afresh, not replayed
        assert planner.cache.hits == kept


def _messages_sent(stderr: str) -> int:
    return sum(int(match.group(2)) for match in MESSAGES.finditer(stderr))


@pytest.mark.full
@pytest.mark.timeout(300)
@pytest.mark.parametrize("ranks", [2, 3])
def test_small_constants_give_numpys_results_with_fewer_messages(ranks: int, tmp_path: Path) -> None:
    expected = numpy_arrays(PROGRAM, tmp_path)
    sent = {}
    for replicate in ("4096", "0"):
        path = tmp_path / f"cluster{replicate}.npz"
        result = run(ranks, PROGRAM, str(path), env=environment(SHOAL_STATS="1", SHOAL_CLUSTER_REPLICATE_BYTES=replicate))
        assert result.returncode == 0, result.stderr[-3000:]
        arrays = load_arrays(path)
        np.testing.assert_array_equal(arrays["field"], expected["field"], strict=True)
        np.testing.assert_array_equal(arrays["weights"], expected["weights"], strict=True)
        np.testing.assert_allclose(arrays["totals"], expected["totals"], rtol=1e-12)  # sums combined over ranks, cancelling: 240,000 terms of about 0.5 give about 20
        # Products of four terms of about 1 that can cancel: BLAS's order of the terms follows
        # the alignment of each rank's block, so a result is NumPy's to a few ulps of the terms.
        np.testing.assert_allclose(arrays["projected"], expected["projected"], rtol=1e-14, atol=PRODUCT_ATOL)
        np.testing.assert_allclose(arrays["early"], expected["early"], rtol=1e-14, atol=PRODUCT_ATOL)
        sent[replicate] = _messages_sent(result.stderr)
    assert 0 < sent["4096"] < sent["0"], sent

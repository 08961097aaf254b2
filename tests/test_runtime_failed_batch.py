"""A batch that fails does not stop the runtime: a program that catches the error goes on and
gets NumPy's results.

Two ways a batch fails: verification refuses it (nothing of it ran; ``shoal/salvage.py`` runs
again what verifies on its own, so the arrays of the other operations recorded with it exist),
or an instruction raises while the engine runs it (the bases of the batch are declared; later
batches use them). Each on both engines, with and without the runtime's own verification.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import pytest
from numpy_fixtures import needs_runtime

from shoal import runtime
from shoal.bytecode import BytecodeError, View

N = 1 << 19
F8, I8 = np.dtype(np.float64), np.dtype(np.int64)


@pytest.fixture(params=[("node", False), ("node", True), ("reference", False), ("reference", True)], ids=lambda p: f"{p[0]}-verify-{p[1]}")
def installed(request: pytest.FixtureRequest) -> Iterator[runtime.Runtime]:
    needs_runtime()
    engine, verify = request.param
    with runtime.configure(engine=engine, eager_threshold=0) as current:
        current.verify = verify
        yield current


def program(xp, fail) -> list[float]:
    """Work recorded before and after an operation that fails (``fail``), the error caught,
    then more work on every array made before it."""
    a = xp.arange(N) * 1.0
    k = a * 3.0
    kept = xp.zeros(N)
    kept[::2] = 5.0
    with pytest.raises((BytecodeError, IndexError)):
        fail()
    later = k + a
    kept += later
    return [float(k.sum()), float(later.sum()), float(kept.sum()), float(a[7])]


def test_a_batch_verification_refuses_leaves_the_rest_running(installed: runtime.Runtime) -> None:
    import shoal.numpy as snp

    def refused() -> None:
        installed.new_base(np.dtype("M8[s]"), 4)  # a declaration no component accepts
        snp.ones(N) + 1.0  # recorded with it
        installed.flush()

    def numpy_fails() -> None:
        raise BytecodeError("the same error")

    assert program(snp, refused) == program(np, numpy_fails)
    assert float((snp.arange(N) * 2.0).sum()) == float((np.arange(N) * 2.0).sum())


def test_an_instruction_refused_alone_is_left_out_and_its_neighbours_run(installed: runtime.Runtime) -> None:
    import shoal.numpy as snp

    before = snp.arange(N) * 2.0
    source = installed.new_base(F8, N, np.arange(N, dtype=F8))
    target = installed.new_base(F8, N)
    installed.record("add", (View(target.id, F8, 0, (N,), (8,)),), (View(source.id, F8, 0, (N,), (8,)),) * 2, misspelled=1)
    after = before + 1.0
    with pytest.raises(BytecodeError, match="misspelled"):
        installed.flush()
    assert float(after.sum()) == float((np.arange(N) * 2.0 + 1.0).sum())
    assert float((before * after).sum()) == float((np.arange(N) * 2.0 * (np.arange(N) * 2.0 + 1.0)).sum())


def test_an_instruction_failing_in_the_engine_leaves_later_batches_running(installed: runtime.Runtime) -> None:
    import shoal.numpy as snp

    def failing() -> None:
        source = installed.new_base(F8, N, np.arange(N, dtype=F8))
        rows = installed.new_base(I8, 3, np.array([1, 2, N + 5]))
        out = installed.new_base(F8, 3)
        installed.record(
            "gather",
            (View(out.id, F8, 0, (3,), (8,)),),
            (View(source.id, F8, 0, (N,), (8,)), View(rows.id, I8, 0, (3,), (8,))),
            key=(("array", 0),),
        )
        installed.read(View(out.id, F8, 0, (3,), (8,)))

    def numpy_fails() -> None:
        np.arange(N)[np.array([1, 2, N + 5])]

    assert program(snp, failing) == program(np, numpy_fails)


@pytest.mark.parametrize("dtype", ["datetime64[s]", "timedelta64[ms]", "U8", "S4", "O"])
def test_astype_to_a_dtype_bytecode_cannot_carry_is_numpys_and_work_goes_on(installed: runtime.Runtime, dtype: str) -> None:
    """Such a cast was recorded lazily: its batch was refused, and every later one named its
    base ("neither declared nor known")."""
    import shoal.numpy as snp

    results = []
    for xp in (np, snp):
        a = xp.arange(N) * 1.5
        k = a * 3.0
        cast = a.astype(dtype)
        k += 1.0
        results.append((type(cast), cast.dtype, cast[:3].tolist(), float(k.sum()), float((k - a).sum())))
        del cast
        results.append(float((xp.arange(N) * 2.0).sum()))
    assert results[:2] == results[2:]


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("direct_work", [0, 1 << 40], ids=["blocks", "direct"])
def test_work_recorded_with_a_failing_call_runs_in_any_order(threads: int, direct_work: int) -> None:
    """The node engine runs what of a failed batch does not depend on the failed instruction:
    scheduled latest first, the work recorded before a singular ``inv`` in its batch had never
    run, and the program that caught ``LinAlgError`` read whatever its memory held."""
    needs_runtime()
    import shoal.numpy as snp
    from shoal.engine import create
    from shoal.engine.node import NodeConfig
    from shoal.engine.node.config import Schedule

    def program(xp) -> list[float]:
        a = xp.arange(N) * 1.0
        singular = xp.ones((64, 64)) * 1.0
        float(a[0]), float(singular[0, 0])  # both settled: the next batch starts from them
        b = a * 2.0 + 1.0
        c = xp.sqrt(b) * 3.0
        s = singular * 2.0
        with pytest.raises(np.linalg.LinAlgError, match="Singular matrix"):
            xp.linalg.inv(s)
        return [float(b.sum()), float(c[:5].sum()), float(c.sum()), float(s.sum()), float((c - b).sum())]

    config = NodeConfig(threads=threads, block_size=1 << 14, compile="off", schedule=Schedule.REVERSE, direct_work=direct_work)
    with runtime.configure(engine=create("node", {"node": config}), eager_threshold=0):
        got = program(snp)
    assert got == pytest.approx(program(np), rel=1e-12)

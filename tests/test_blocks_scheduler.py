"""The one scheduler loop on its own: a fake poll source stands for outside events, and the
thread pool the node engine uses."""

from __future__ import annotations

import sys

import pytest

from shoal.engine.blocks import BlockOp, DependencyLists, run_ready
from shoal.engine.blocks.thread_pool import WorkerPool


class FakeRemote:
    """Submitted operations are "remote": they finish only when this source reports them.

    A non-blocking poll delivers nothing until ``quiet_polls`` of them have been made, then the
    oldest pending operation (an event that arrives later); a blocking poll delivers the oldest
    one at once. At every blocking poll it checks that nothing else could have run: no operation
    outside the pending ones is ready (unless ``capacity`` are in flight; an exclusive one waits for
    them), and nothing is left
    to build.
    """

    def __init__(self, ops: list[BlockOp], quiet_polls: int = 0, fail: set[int] = frozenset(), capacity: int = 100) -> None:
        self.ops = ops
        self.quiet_polls = quiet_polls
        self.fail = fail
        self.capacity = capacity
        self.pending: list[BlockOp] = []
        self.delivered: list[BlockOp] = []
        self.log: list[str] = []
        self.blocking_waits = 0
        self.building_done = True

    def submit(self, op: BlockOp) -> None:
        assert len(self.pending) < self.capacity
        self.pending.append(op)
        self.log.append(f"submit {op.label}")

    def _deliver(self) -> list[tuple[BlockOp, BaseException | None]]:
        op = self.pending.pop(0)
        self.delivered.append(op)
        self.log.append(f"arrive {op.label}")
        return [(op, RuntimeError(f"{op.label} failed remotely") if op.seq in self.fail else None)]

    def poll(self, timeout: float | None) -> list[tuple[BlockOp, BaseException | None]]:
        if timeout == 0:
            if self.quiet_polls > 0 or not self.pending:
                self.quiet_polls -= 1
                return []
            return self._deliver()
        self.blocking_waits += 1
        assert self.pending, "the loop waits with nothing in flight"
        assert self.building_done, "the loop waits while it could still build"
        runnable = [op.label for op in self.ops if not op.done and op.refcount == 0 and not op.exclusive and op not in self.pending and op not in self.delivered]
        assert not runnable or len(self.pending) == self.capacity, f"the loop waits while {runnable} could run"
        self.log.append("wait")
        return self._deliver()


def local(deps: DependencyLists, seq: int, log: list[str], label: str, reads=(), writes=()) -> BlockOp:
    op = BlockOp(seq, lambda: log.append(f"run {label}"), tuple(reads), tuple(writes), inline=True, label=label)
    deps.insert(op)
    return op


def remote(deps: DependencyLists, seq: int, label: str, reads=(), writes=()) -> BlockOp:
    op = BlockOp(seq, lambda: pytest.fail("a remote operation runs elsewhere"), tuple(reads), tuple(writes), label=label)
    deps.insert(op)
    return op


def test_an_event_that_arrives_later_makes_its_dependents_ready_while_local_work_goes_on():
    """receive (remote) -> use (reads what was received); the local steps are independent and
    are built one at a time, so the loop keeps polling without waiting while it builds::

        receive ──> use
        step0  step1  step2  step3   (built by ``more``)
    """
    deps = DependencyLists()
    log: list[str] = []
    receive = remote(deps, 0, "receive", writes=[(1, 0)])
    use = local(deps, 1, log, "use", reads=[(1, 0)], writes=[(2, 0)])
    steps = iter(range(4))

    def more() -> list[BlockOp] | None:
        number = next(steps, None)
        if number is None:
            fake.building_done = True
            return None
        return [local(deps, 2 + number, log, f"step{number}", writes=[(3, number)])]

    fake = FakeRemote(deps.ops, quiet_polls=2)
    fake.building_done = False
    fake.log = log
    stats = run_ready([receive, use], fake.submit, fake, capacity=4, more=more)
    assert stats.operations == 6
    assert log.index("arrive receive") < log.index("run use")
    assert log.index("run step0") < log.index("arrive receive")  # local work ran before the event
    assert "wait" not in log  # the event arrived while the loop was still building
    assert all(op.done for op in deps.ops)


def test_the_loop_waits_only_when_nothing_can_run():
    """Two transfers in flight; local work that needs neither runs before any wait, work that
    needs the first runs as soon as it arrives, before the loop waits for the second::

        a ──> after_a
        b ──> after_b
        free0, free1
    """
    deps = DependencyLists()
    log: list[str] = []
    a = remote(deps, 0, "a", writes=[(1, 0)])
    b = remote(deps, 1, "b", writes=[(1, 1)])
    after_a = local(deps, 2, log, "after_a", reads=[(1, 0)])
    after_b = local(deps, 3, log, "after_b", reads=[(1, 1)])
    free = [local(deps, 4 + n, log, f"free{n}", writes=[(2, n)]) for n in range(2)]
    fake = FakeRemote(deps.ops)
    fake.log = log
    run_ready([a, b, after_a, after_b, *free], fake.submit, fake, capacity=4)
    assert log == ["submit a", "submit b", "run free0", "run free1", "wait", "arrive a", "run after_a", "wait", "arrive b", "run after_b"]
    assert fake.blocking_waits == 2


def test_capacity_bounds_what_is_in_flight():
    deps = DependencyLists()
    ops = [remote(deps, n, f"r{n}", writes=[(1, n)]) for n in range(7)]
    fake = FakeRemote(deps.ops, capacity=2)
    run_ready(ops, fake.submit, fake, capacity=2)
    assert all(op.done for op in ops)
    assert fake.blocking_waits == 7


def test_a_remote_failure_is_raised_after_what_is_in_flight_has_finished_and_stops_its_dependents():
    deps = DependencyLists()
    log: list[str] = []
    bad = remote(deps, 0, "bad", writes=[(1, 0)])
    good = remote(deps, 1, "good", writes=[(1, 1)])
    after_bad = local(deps, 2, log, "after_bad", reads=[(1, 0)])
    fake = FakeRemote(deps.ops, fail={0})
    fake.log = log
    named: list[tuple[BlockOp, BaseException]] = []
    with pytest.raises(RuntimeError, match="bad failed remotely") as caught:
        run_ready([bad, good, after_bad], fake.submit, fake, capacity=4, on_failure=lambda op, error: named.append((op, error)))
    assert "arrive good" in log and "run after_bad" not in log and not fake.pending
    assert named == [(bad, caught.value)]  # the caller learns which operation failed


def test_an_exclusive_operation_runs_alone_on_the_loops_thread():
    deps = DependencyLists()
    log: list[str] = []
    transfer = remote(deps, 0, "transfer", writes=[(1, 0)])
    alone = BlockOp(1, lambda: log.append("run alone"), (), ((2, 0),), exclusive=True, label="alone")
    deps.insert(alone)
    fake = FakeRemote(deps.ops)
    fake.log = log
    run_ready([transfer, alone], fake.submit, fake, capacity=4)
    assert log == ["submit transfer", "wait", "arrive transfer", "run alone"]


def test_an_operation_that_never_becomes_ready_is_reported():
    deps = DependencyLists()
    first = BlockOp(0, lambda: None, (), ((1, 0),))
    second = BlockOp(1, lambda: None, ((1, 0),), ())
    deps.insert(first)
    deps.insert(second)
    first.refcount = 1  # as if it waited for something no one will finish
    with pytest.raises(RuntimeError, match="2 block operations never became ready"):
        run_ready([first, second], lambda op: None, FakeRemote([]), capacity=1, serial=True)


def appending(log: list[str], entry: str):
    return lambda: log.append(entry)


def test_serial_runs_everything_on_the_loops_thread_in_program_order_or_reversed():
    for reverse, expected in ((False, ["x0", "x1", "x2"]), (True, ["x2", "x1", "x0"])):
        deps = DependencyLists()
        log: list[str] = []
        ops = [BlockOp(n, appending(log, f"x{n}"), (), ((1, n),)) for n in range(3)]
        deps.insert_group(ops)
        run_ready(ops, lambda op: pytest.fail("serial submits nothing"), FakeRemote([]), capacity=1, serial=True, reverse=reverse)
        assert log == expected
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("threads", [1, 3])
def test_the_pool_runs_operations_built_while_earlier_ones_run_in_dependency_order(threads, reverse):
    """Each step writes block 0 after reading it (a chain) and reads a block of its own; steps
    are built one at a time by ``more`` while the pool runs the earlier ones."""
    deps = DependencyLists()
    log: list[int] = []

    def step(number: int) -> list[BlockOp]:
        built = len(deps.ops)
        chain = BlockOp(2 * number, lambda: log.append(number), ((1, 0),), ((1, 0),))
        side = BlockOp(2 * number + 1, lambda: log.append(-number), ((1, 0),), ((2, number),))
        deps.insert(side)
        deps.insert(chain)
        return deps.ops[built:]

    steps = iter(range(1, 30))
    pool = WorkerPool(threads, reverse=reverse)
    try:
        stats = pool.run(step(0), lambda _op: None, lambda: next((step(n) for n in steps), None))
    finally:
        pool.close()
    assert stats.operations == 60 and sorted(log) == sorted([*range(30), *(-n for n in range(30))])
    assert [n for n in log if n > 0] == list(range(1, 30))
    for number in range(1, 30):  # a side read sees the chain's write before it, never a later one
        assert log.index(number - 1) < log.index(-number) < log.index(number)
    for o in deps.ops:
        assert o.done and o.refcount == 0


@pytest.mark.parametrize("fails", [False, True])
def test_building_while_running_restores_the_switch_interval_and_reports_a_failing_build(fails):
    built = iter([[BlockOp(1, lambda: None, (), ((1, 0),))]])

    def more():
        if fails:
            raise ValueError("cannot build")
        return next(built, None)

    before = sys.getswitchinterval()
    pool = WorkerPool(2)
    try:
        if fails:
            with pytest.raises(ValueError, match="cannot build"):
                pool.run([], lambda _op: None, more)
        else:
            assert pool.run([], lambda _op: None, more).operations == 1
    finally:
        pool.close()
    assert sys.getswitchinterval() == before


def failing(log: list[str], label: str):
    def run() -> None:
        log.append(f"run {label}")
        raise ValueError(f"{label} failed")

    return run


@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("threads", [1, 2])
def test_the_pool_runs_what_does_not_depend_on_a_failed_operation(threads: int, reverse: bool) -> None:
    """A program that catches the error goes on with the arrays of the other operations of the
    batch, those before the failed one included (reversed, they would otherwise never run); the
    failed one's dependents never run, and the failure raised is the earliest in program order."""
    deps = DependencyLists()
    log: list[str] = []
    ops = [
        BlockOp(0, appending(log, "run before"), ((1, 0),), ((2, 0),)),
        BlockOp(1, appending(log, "run before-chain"), ((2, 0),), ((2, 1),)),
        BlockOp(2, failing(log, "late"), ((1, 0),), ((3, 0),)),
        BlockOp(3, appending(log, "run uses-late"), ((3, 0),), ((4, 0),)),
        BlockOp(4, appending(log, "run after"), ((1, 0),), ((5, 0),)),
        BlockOp(5, failing(log, "last"), ((1, 0),), ((6, 0),)),
    ]
    for op in ops:
        deps.insert(op)
    pool = WorkerPool(threads, reverse=reverse)
    named: list[BlockOp] = []
    try:
        with pytest.raises(ValueError, match="late failed"):
            pool.run(ops, lambda op: None, on_failure=lambda op, error: named.append(op))
    finally:
        pool.close()
    assert sorted(log) == ["run after", "run before", "run before-chain", "run last", "run late"]
    assert named == [ops[2]]


def test_without_finish_others_a_failure_starts_nothing_more() -> None:
    deps = DependencyLists()
    log: list[str] = []
    ops = [BlockOp(0, failing(log, "first"), (), ((1, 0),)), BlockOp(1, appending(log, "run second"), (), ((2, 0),))]
    deps.insert_group(ops)
    with pytest.raises(ValueError, match="first failed"):
        run_ready(ops, lambda op: pytest.fail("serial submits nothing"), FakeRemote([]), capacity=1, serial=True)
    assert log == ["run first"]

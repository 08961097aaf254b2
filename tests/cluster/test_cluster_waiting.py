"""How a rank waits (``shoal/cluster/waiting.py``): MPI's own wait, or tests that give the
processor up between them, yielding first and sleeping once the wait is long; and when a
session chooses which."""

from __future__ import annotations

import pytest

from shoal.cluster import session, waiting


class Clock:
    """``time.perf_counter`` that moves only when a wait sleeps or yields."""

    def __init__(self) -> None:
        self.now = 0.0
        self.yields = 0
        self.sleeps: list[float] = []

    def perf_counter(self) -> float:
        return self.now

    def sched_yield(self) -> None:
        self.yields += 1
        self.now += 0.0004

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Clock:
    fake = Clock()
    monkeypatch.setattr(waiting.time, "perf_counter", fake.perf_counter)
    monkeypatch.setattr(waiting.time, "sleep", fake.sleep)
    monkeypatch.setattr(waiting.os, "sched_yield", fake.sched_yield)
    return fake


def test_a_finished_request_costs_one_test(clock: Clock) -> None:
    calls = []
    assert waiting._poll(lambda: calls.append(1) or [3]) == [3]
    assert len(calls) == 1 and clock.yields == 0 and not clock.sleeps


def test_a_wait_yields_then_sleeps_between_tests(clock: Clock) -> None:
    answers = iter([[]] * 12 + [[0, 2]])
    assert waiting._poll(lambda: next(answers)) == [0, 2]
    assert clock.yields == 3  # 0.4 ms each: the first millisecond
    assert clock.sleeps == [waiting.SLEEP_SECONDS] * 9


class Request:
    """An MPI request's ``Test`` and ``Wait``: finished after ``tests`` tests."""

    def __init__(self, tests: int) -> None:
        self.tests = tests
        self.waited = False

    def Test(self, status: object = None) -> bool:
        self.tests -= 1
        return self.tests <= 0

    def Wait(self, status: object = None) -> None:
        self.waited = True


def test_yielding_tests_where_spinning_waits_in_mpi(clock: Clock) -> None:
    spun, polled = Request(5), Request(5)
    waiting.wait(spun, yielding=False)
    waiting.wait(polled, yielding=True)
    assert spun.waited and spun.tests == 5
    assert not polled.waited and polled.tests == 0 and (clock.yields, len(clock.sleeps)) == (3, 1)


@pytest.mark.parametrize(
    "choice, local_ranks, cores, expected",
    [("auto", 2, 2, False), ("auto", 3, 2, True), ("auto", 4, 8, False), ("spin", 8, 2, False), ("yield", 1, 8, True)],
)
def test_ranks_yield_where_a_host_has_more_ranks_than_cores(
    monkeypatch: pytest.MonkeyPatch, choice: str, local_ranks: int, cores: int, expected: bool
) -> None:
    import shoal.threads

    monkeypatch.setenv("SHOAL_CLUSTER_WAIT", choice)
    monkeypatch.setattr(shoal.threads, "available_cores", lambda: cores)
    assert session._yielding(local_ranks) is expected


class Control:
    """A communicator whose ``Ibcast`` of a command header takes ``durations`` seconds in turn."""

    def __init__(self, clock: Clock, durations: list[float]) -> None:
        self.clock = clock
        self.durations = iter(durations)
        self.how: list[str] = []

    def Ibcast(self, header: object, root: int) -> object:
        header[:] = [int(session.Command.START), 0, 0]  # type: ignore[index]
        control, seconds = self, next(self.durations)

        class Request:
            def Wait(self, status: object = None) -> None:
                control.how.append("wait")
                control.clock.now += seconds

            def Test(self, status: object = None) -> bool:
                control.how.append("test")
                control.clock.now += seconds
                return True

        return Request()


def test_a_rank_gives_the_processor_up_after_a_long_idle(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(session.time, "perf_counter", clock.perf_counter)
    idle = object.__new__(session.Session)
    idle.yielding = False
    idle._idle_long = False
    control = Control(clock, [0.0005, 0.05, 0.0005, 0.0005, 0.01])
    idle.control = control
    for _ in range(5):
        assert idle.receive()[0] is session.Command.START
    assert control.how == ["wait", "wait", "test", "wait", "wait"]


def test_waiting_for_some_of_no_active_request_returns_at_once(clock: Clock, monkeypatch: pytest.MonkeyPatch) -> None:
    """MPI's ``Testsome`` answers None when no request is active; ``Waitsome`` returns then."""
    import sys
    import types

    answers = iter([[], None])
    fake = types.SimpleNamespace(Request=types.SimpleNamespace(Testsome=lambda requests, statuses: next(answers)))
    monkeypatch.setitem(sys.modules, "mpi4py", types.SimpleNamespace(MPI=fake))
    monkeypatch.setitem(sys.modules, "mpi4py.MPI", fake)
    assert waiting.wait_some([object()], [object()], yielding=True) == []
    assert clock.yields == 1

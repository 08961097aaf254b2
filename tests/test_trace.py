"""The tracer: the events of known programs, their nesting and tracks, trace-summary, and tracing off."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import shoal.numpy as snp
from shoal import runtime, settings, trace
from shoal.engine.node import NodeConfig, NodeEngine
from shoal.trace_summary import TraceError, format_totals, load, main, self_times, totals

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def tracer() -> Iterator[trace.Tracer]:
    assert trace.TRACER is None
    active = trace.start()
    try:
        yield active
    finally:
        trace.stop()


def _heat(xp, size: int, sweeps: int) -> tuple[object, float]:
    """A small heat-equation run (``examples/heat_equation.py`` with a fixed number of sweeps)."""
    grid = xp.zeros((size + 2, size + 2))
    grid[0, :] = 40.0
    grid[-1, :] = -273.15
    center, north, south = grid[1:-1, 1:-1], grid[:-2, 1:-1], grid[2:, 1:-1]
    west, east = grid[1:-1, :-2], grid[1:-1, 2:]
    delta = 0.0
    for _ in range(sweeps):
        work = 0.2 * (center + north + south + east + west)
        delta = float(xp.sum(xp.abs(work - center)))
        center[:] = work
    return grid, delta


def _tracks(events: list[dict]) -> dict[tuple[int, int], str]:
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}


def _complete(events: list[dict]) -> list[dict]:
    return [e for e in events if e["ph"] == "X"]


def _inside(inner: dict, outer: dict) -> bool:
    return outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"] + 1e-3


def _check_well_formed(events: list[dict]) -> None:
    """Every complete event lies on a named track, and events on one track nest or are disjoint."""
    tracks = _tracks(events)
    by_track: dict[tuple[int, int], list[dict]] = {}
    for event in _complete(events):
        assert event["cat"] in trace.CATEGORIES, event
        assert event["dur"] >= 0 and event["ts"] >= 0, event
        assert (event["pid"], event["tid"]) in tracks, event
        by_track.setdefault((event["pid"], event["tid"]), []).append(event)
    for track in by_track.values():
        track.sort(key=lambda e: (e["ts"], -e["dur"]))
        for first, second in itertools.pairwise(track):
            assert second["ts"] >= first["ts"] + first["dur"] - 1e-3 or _inside(second, first), (first, second)


def test_a_heat_equation_run_has_its_batches_plans_and_block_operations(tracer):
    engine = NodeEngine(NodeConfig(threads=2, block_size=1024, compile="off", direct_work=0))
    with runtime.configure(engine=engine, eager_threshold=0, settled_threshold=0):
        grid, delta = _heat(snp, 62, 3)
        values = np.asarray(grid)
    expected, expected_delta = _heat(np, 62, 3)
    np.testing.assert_array_equal(values, expected)
    assert delta == pytest.approx(expected_delta, rel=1e-12)  # summed block by block

    events = json.loads(json.dumps(tracer.document()))["traceEvents"]  # what `write` saves
    _check_well_formed(events)
    tracks = _tracks(events)
    main_track = (os.getpid(), threading.get_native_id())
    assert tracks[main_track] == "main"
    complete = _complete(events)
    names = {e["name"] for e in complete}
    assert {"flush", "execute batch", "plan", "fetch", "wait for workers"} <= names
    batches = [e for e in complete if e["name"] == "execute batch"]
    flushes = [e for e in complete if e["name"] == "flush"]
    plans = [e for e in complete if e["name"].startswith("plan")]
    assert len(batches) == len(flushes) == len(plans) >= 3  # one batch per sweep at least (float(...) flushes)
    for event in batches + flushes + plans:
        assert (event["pid"], event["tid"]) == main_track
    for batch in batches:
        assert any(_inside(batch, flush) for flush in flushes)
        assert sum(_inside(plan, batch) for plan in plans) == 1
    kernels = [e for e in complete if e["name"].startswith("kernel")]
    assert kernels and all(e["cat"] == "compute" for e in kernels)
    worker_tracks = {(e["pid"], e["tid"]) for e in kernels}
    assert worker_tracks, "the pool's threads ran the kernels"
    assert all(tracks[track].startswith("shoal-worker-") for track in worker_tracks)
    assert main_track not in worker_tracks
    for kernel in kernels:  # every kernel ran during a batch
        assert any(_inside(kernel, batch) for batch in batches)
    fetched = [e for e in complete if e["name"] == "fetch"]
    assert all(e["cat"] == "communication" and not any(_inside(e, b) for b in batches) for e in fetched)


def test_tracing_off_records_nothing(monkeypatch):
    monkeypatch.delenv(settings.TRACE.name, raising=False)
    assert trace.TRACER is None
    assert trace.from_settings() is None
    engine = NodeEngine(NodeConfig(threads=2, block_size=1024, compile="off", direct_work=0))
    with runtime.configure(engine=engine, eager_threshold=0):
        grid, _ = _heat(snp, 30, 2)
        np.asarray(grid)
    assert trace.TRACER is None


def test_write_replaces_the_file_whole_and_leaves_nothing_else(tmp_path, tracer):
    with tracer.span("outer", "scheduling"):
        with tracer.span("inner", "compute"):
            pass
    target = tmp_path / "out.json"
    target.write_text("old")
    tracer.write(str(target))
    assert [event["name"] for event in _complete(load(str(target)))] == ["inner", "outer"]
    tracer.complete("bad", "compute", 0.0, 1.0, {"value": object()})  # cannot be written as JSON
    with pytest.raises(TypeError):
        tracer.write(str(target))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["out.json"]
    assert [event["name"] for event in _complete(load(str(target)))] == ["inner", "outer"]


# ------------------------------------------------------------------------------ trace-summary


def _event(name: str, category: str, ts: float, dur: float, tid: int) -> dict:
    return {"ph": "X", "name": name, "cat": category, "ts": ts, "dur": dur, "pid": 1, "tid": tid}


KNOWN = [
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "main"}},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 2, "args": {"name": "shoal-worker-0"}},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 3, "args": {"name": "shoal-worker-1"}},
    {"ph": "M", "name": "thread_name", "pid": 1, "tid": 4, "args": {"name": "shoal-compiler"}},
    _event("flush", "scheduling", 0, 1_000_000, 1),
    _event("execute batch", "scheduling", 100_000, 800_000, 1),
    _event("plan", "scheduling", 100_000, 200_000, 1),
    _event("wait for workers", "wait", 300_000, 500_000, 1),
    _event("kernel 1.0", "compute", 300_000, 400_000, 2),
    _event("kernel 1.1", "compute", 300_000, 100_000, 3),
    _event("kernel 1.2", "compute", 400_000, 200_000, 3),
    _event("compile k", "compile", 0, 2_000_000, 4),
    _event("fetch", "communication", 1_000_000, 250_000, 1),
    {"ph": "M", "name": "thread_name", "pid": 9, "tid": 9, "args": {"name": "task worker 0"}},
    {"ph": "X", "name": "f#1", "cat": "task", "ts": 0, "dur": 3_000_000, "pid": 9, "tid": 9},
]


def test_summary_totals_count_self_time_once_per_category():
    sums = totals(KNOWN)
    assert sums == pytest.approx(
        {
            # flush 1.0 - batch 0.8 = 0.2; batch 0.8 - plan 0.2 - wait 0.5 = 0.1; plan 0.2
            "scheduling": 0.5,
            "wait": 0.5,
            "compute": 0.7,
            "compile": 2.0,
            "communication": 0.25,
            "task": 3.0,
            "idle": (0.8 - 0.4) + (0.8 - 0.3),  # per worker thread: batch time less its compute
        }
    )
    own = {event["name"]: micro for event, micro in self_times(KNOWN)}
    assert own["flush"] == 200_000 and own["execute batch"] == 100_000


def test_summary_command_prints_every_category(tmp_path, capsys):
    path = tmp_path / "trace.json"
    path.write_text(json.dumps({"traceEvents": KNOWN}))
    assert main([str(path)]) == 0
    printed = capsys.readouterr().out
    assert printed.strip() == format_totals(totals(KNOWN))
    for category in ("compute", "scheduling", "compile", "idle", "communication", "wait", "task"):
        assert category in printed
    assert "2.0000" in printed  # compile


@pytest.mark.parametrize(
    "text",
    ["not json", json.dumps({"traceEvents": 3}), json.dumps([{"ph": "X", "ts": "0", "dur": 1}]), json.dumps([{"ph": "X", "ts": 0, "dur": float("inf")}])],
)
def test_summary_rejects_what_is_not_a_trace(tmp_path, text, capsys):
    path = tmp_path / "trace.json"
    path.write_text(text)
    with pytest.raises(TraceError):
        load(str(path))
    assert main([str(path)]) == 2
    assert "shoal: error" in capsys.readouterr().err


# ------------------------------------------------------------------------------ python -m shoal

HEAT = """
import numpy as np
grid = np.zeros((66, 66))
grid[0, :] = 40.0
for _ in range(3):
    grid[1:-1, 1:-1] = 0.2 * (grid[1:-1, 1:-1] + grid[:-2, 1:-1] + grid[2:, 1:-1] + grid[1:-1, :-2] + grid[1:-1, 2:])
print(repr(float(grid.sum())))
"""

TASKS = """
import numpy as np
from shoal.tasks import barrier, task, wait_on

@task(returns=1)
def square(x):
    return x * x

if __name__ == "__main__":
    parts = [square(np.full(100, float(i))) for i in range(6)]
    print(sum(float(wait_on(part).sum()) for part in parts))
    barrier()
"""


def _run(tmp_path: Path, source: str, trace_name: str | None, **environ: str) -> subprocess.CompletedProcess[str]:
    program = tmp_path / "app.py"
    program.write_text(textwrap.dedent(source))
    env = {key: value for key, value in os.environ.items() if not key.startswith("SHOAL_")}
    env.update(environ, SHOAL_NUM_THREADS="2", SHOAL_COMPILE="off", PYTHONPATH=str(ROOT))
    if trace_name is not None:
        env[settings.TRACE.name] = trace_name
    done = subprocess.run([sys.executable, "-m", "shoal", "app.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=100)
    assert done.returncode == 0, done.stderr
    return done


def test_shoal_trace_writes_the_run_and_tracing_off_writes_nothing(tmp_path):
    lazy = {"SHOAL_EAGER_THRESHOLD": "0", "SHOAL_SETTLED_THRESHOLD": "0", "SHOAL_DIRECT_WORK": "0", "SHOAL_BLOCK_SIZE": "512"}
    plain = _run(tmp_path, HEAT, None, **lazy)
    assert sorted(path.name for path in tmp_path.iterdir()) == ["app.py"]
    traced = _run(tmp_path, HEAT, "out.json", **lazy)
    assert traced.stdout == plain.stdout
    assert sorted(path.name for path in tmp_path.iterdir()) == ["app.py", "out.json"]
    events = load(str(tmp_path / "out.json"))
    _check_well_formed(events)
    names = [e["name"] for e in _complete(events)]
    assert "execute batch" in names and any(name.startswith("kernel") for name in names)
    assert {e["pid"] for e in events} == {traced_pid(events)}


def traced_pid(events: list[dict]) -> int:
    """The pid of the process the trace names as Shoal's main process."""
    (pid,) = [e["pid"] for e in events if e["ph"] == "M" and e["name"] == "process_name" and e["args"]["name"] == "shoal main process"]
    return pid


@pytest.mark.full
def test_a_task_program_puts_each_task_on_its_worker_process_track(tmp_path):
    done = _run(tmp_path, TASKS, "tasks.json")
    assert float(done.stdout) == sum(100 * float(i) ** 2 for i in range(6))
    assert sorted(path.name for path in tmp_path.iterdir()) == ["app.py", "tasks.json"]
    events = load(str(tmp_path / "tasks.json"))
    _check_well_formed(events)
    main_pid = traced_pid(events)
    complete = _complete(events)
    submits = [e for e in complete if e["name"] == "submit square"]
    assert len(submits) == 6 and {e["pid"] for e in submits} == {main_pid}
    ran = [e for e in complete if e["cat"] == "task"]
    assert sorted(e["name"] for e in ran) == [f"square#{i}" for i in range(1, 7)]
    processes = {e["pid"]: e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "process_name"}
    for event in ran:
        assert event["pid"] != main_pid and event["tid"] == event["pid"]
        assert processes[event["pid"]].startswith("shoal task worker ")
        assert event["ts"] >= min(e["ts"] for e in submits)  # one clock for every process
    waits = [e for e in complete if e["cat"] == "wait"]
    assert {e["name"] for e in waits} == {"wait_on", "barrier"}
    last_task_end = max(e["ts"] + e["dur"] for e in ran)
    barrier = next(e for e in waits if e["name"] == "barrier")
    assert last_task_end <= barrier["ts"] + barrier["dur"] + 1e-3
    assert totals(events)["task"] > 0


def test_the_proxy_client_records_its_requests_and_the_waits_for_their_answers(tracer):
    from proxy_harness import client_for, live_server

    with live_server() as server:
        client = client_for(server)
        with runtime.configure(engine=client, eager_threshold=0):
            grid = snp.zeros((64, 64))
            grid[0, :] = 1.0
            for _ in range(3):
                grid[1:-1, 1:-1] = 0.5 * (grid[:-2, 1:-1] + grid[2:, 1:-1])
            total = float(grid.sum())
            trips = client.round_trips
    assert total > 0
    main_track = (os.getpid(), threading.get_native_id())
    mine = [e for e in _complete(tracer.events()) if (e["pid"], e["tid"]) == main_track]
    sends = [e for e in mine if e["name"] == "send batch"]
    requests = [e for e in mine if e["name"] == "send FETCH request"]
    answers = [e for e in mine if e["name"] == "wait for FETCH answer"]
    assert sends and all(e["cat"] == "communication" and e["args"]["bytes"] > 0 for e in sends)
    assert len(requests) == len(answers) == 1 <= trips
    (request,), (answer,) = requests, answers
    assert answer["cat"] == "wait" and answer["ts"] >= request["ts"] + request["dur"] - 1e-3
    assert answer["args"]["bytes"] > 0
    (fetch,) = [e for e in mine if e["name"] == "fetch"]
    assert _inside(request, fetch) and _inside(answer, fetch)
    assert min(e["ts"] for e in sends) <= request["ts"]  # the batches went before the read

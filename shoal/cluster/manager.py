"""The cluster manager: the component at the top of the stack on rank 0 under ``mpiexec``.

Rank 0 runs the program. Each batch its runtime hands here is broadcast in the bytecode wire
format to the other ranks, which run the same plan (:mod:`shoal.cluster.plan`) on their own node
engines; rank 0 runs its share in :meth:`ClusterManager.execute` too, so a batch has run on every
rank when ``execute`` returns. :meth:`ClusterManager.fetch` assembles a view at rank 0 from its
owners. The component below (``inner``) is this rank's node engine.
"""

from __future__ import annotations

import json
import sys
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

from shoal import drawn, settings, trace
from shoal.bytecode import Batch, Instruction, View, dumps
from shoal.cluster import alike, replayed, segments
from shoal.cluster.cyclic import parse_block
from shoal.cluster.drawn_ahead import announce, expected_range
from shoal.cluster.link import PROBE_BYTES, SLOW_ROUND_TRIP, round_trip
from shoal.cluster.plan import PlanConfig
from shoal.cluster.rank import RankEngine, raise_failure
from shoal.cluster.session import Command, Session, current
from shoal.engine.component import Component
from shoal.errors import ShoalFallbackWarning
from shoal.fp_warnings import at_user_line
from shoal.interrupts import interrupts_held


@dataclass(frozen=True)
class ClusterConfig:
    """``min_bytes``: bases this large are distributed; ``max_pieces``: pieces per instruction
    before it runs gathered; ``latency_hiding``: the flush algorithm, else blocking messages;
    ``halo_rows``: rows of its neighbours each rank keeps (:mod:`shoal.cluster.halo`);
    ``halo_sweeps``: ``own``, ``redundant`` or ``auto`` (:mod:`shoal.cluster.link`);
    ``interior_first``: ``on``, ``off`` or ``auto`` (:mod:`shoal.cluster.interior_first`);
    ``replicate_bytes``: smaller bases a batch brings with data and does not write are kept on
    every rank (:mod:`shoal.cluster.declared_layouts`)."""

    min_bytes: int = 1 << 16
    max_pieces: int = 4096
    latency_hiding: bool = True
    halo_rows: int = 8
    layout: str = "rows"
    block: tuple[int, ...] = ()
    halo_sweeps: str = "auto"
    interior_first: str = "auto"
    replicate_bytes: int = 1 << 12

    @classmethod
    def from_settings(cls, environ: Mapping[str, str] | None = None) -> ClusterConfig:
        return cls(
            settings.CLUSTER_MIN_BYTES.value(environ=environ),
            settings.CLUSTER_MAX_PIECES.value(environ=environ),
            settings.LATENCY_HIDING.value(environ=environ) == "on",
            settings.CLUSTER_HALO.value(environ=environ),
            settings.CLUSTER_LAYOUT.value(environ=environ),
            parse_block(settings.CLUSTER_BLOCK.value(environ=environ) or ""),
            settings.CLUSTER_HALO_SWEEPS.value(environ=environ),
            settings.CLUSTER_INTERIOR_FIRST.value(environ=environ),
            settings.CLUSTER_REPLICATE_BYTES.value(environ=environ),
        )

    def plan(self, redundant_rows: bool = True, redundant_for_sweeps: bool = False, interior_first: bool = False) -> PlanConfig:
        return PlanConfig(
            self.min_bytes,
            self.max_pieces,
            self.replicate_bytes,
            halo_rows=self.halo_rows,
            layout=self.layout,
            block=self.block,
            redundant_rows=redundant_rows,
            redundant_for_sweeps=redundant_for_sweeps,
            interior_first=interior_first,
        )


def rank_engine(session: Session, inner: Component, config: ClusterConfig) -> RankEngine:
    """This rank's engine over the session's data communicator (every rank calls this at the
    same point: ``auto`` halo sweeps or interior first time the link here, collectively)."""
    seconds = None
    own_rows_auto = config.halo_sweeps == "own" and config.interior_first == "auto" and config.latency_hiding
    if (config.halo_sweeps == "auto" or own_rows_auto) and config.halo_rows and session.ranks > 1:
        seconds = round_trip(session.data)
    slow = seconds is not None and seconds > SLOW_ROUND_TRIP
    interior = config.latency_hiding and (config.interior_first == "on" or (config.interior_first == "auto" and slow))
    if config.halo_sweeps == "auto":
        redundant, for_sweeps = slow and not interior, not slow
    else:
        redundant, for_sweeps = config.halo_sweeps == "redundant", False
    scale_direct_work(inner, session.ranks)
    engine = RankEngine(inner, session.data, config.plan(redundant, for_sweeps, interior and not redundant), config.latency_hiding, session)
    engine.round_trip = seconds
    return engine


def scale_direct_work(inner: Component, ranks: int) -> None:
    """Lower the node engine's direct-work threshold on a rank of ``ranks``: a rank runs its share
    of a distributed batch, and that share reaches its node engine in pieces between its messages,
    so the threshold is divided by twice the ranks. Heat 1000² at 2 ranks: each rank's sweep is
    4.0-4.5 million element operations against 9 million on one process (2^23 the threshold); it
    ran instruction by instruction, 2.7 ms a sweep, against 0.7 ms fused. Without compiled
    kernels (``SHOAL_COMPILE=off``) the blocked path runs NumPy per tile, which loses to direct
    runs at these sizes, so the threshold stays."""
    mode = getattr(getattr(inner, "config", None), "compile", None)
    if getattr(mode, "value", None) == "off":
        return
    work = getattr(inner, "direct_work", None)
    if isinstance(work, int) and not isinstance(work, bool) and work > 0 and ranks > 1:
        inner.direct_work = max(1, work // (2 * ranks))  # type: ignore[attr-defined]


class ClusterManager(Component):
    """Runs batches across the ranks of an MPI job (paper 003); created on rank 0."""

    name = "cluster"
    layered = True

    def __init__(self, config: ClusterConfig | None, inner: Component) -> None:
        session = current()
        if session is None:
            raise RuntimeError("the cluster component runs under mpiexec: `mpiexec -n N python -m shoal app.py`")
        if session.rank != 0:
            raise RuntimeError("the cluster component is created on rank 0 only")
        self.config = config or ClusterConfig()
        self.inner = inner
        self.session = session
        with interrupts_held():
            session.send(Command.START)  # the other ranks wait for it to start their engines
            self.engine = rank_engine(session, inner, self.config)
        self._closed = False

    @classmethod
    def configure(cls, environ: Mapping[str, str] | None = None) -> ClusterConfig:
        return ClusterConfig.from_settings(environ)

    def prefers_local_loops(self) -> bool:
        return True

    def execute(self, batch: Batch) -> None:
        self._check_open()
        with interrupts_held():
            self._execute(batch)

    def _execute(self, batch: Batch) -> None:
        began = time.perf_counter()
        watched = self.engine.notes.claim(batch)
        keyed = self.engine.planner.keyed(batch)
        replay = replayed.request(self.engine.planner, keyed)
        starts = None
        if replay is None:
            ids = [decl.id for decl in batch.bases if decl.id in batch.data]
            encoded, starts = self._alike(batch)
            if encoded is None:
                self.session.send(Command.EXECUTE, dumps(Batch(bases=batch.bases, instructions=batch.instructions)), [watched, *ids])
            else:
                payload, structure = encoded
                self.session.send(Command.ALIKE, payload, [watched, len(ids), *ids, *structure])
        else:  # a plan every rank keeps: its number, the batch's bases and its constants
            self.session.send(Command.REPLAY, replayed.encode_constants(batch), [watched, *replay])
            self.engine.flusher.stats.by_number += 1
        self.engine.send_data(batch)  # each rank gets its part of the data only
        self.engine.flusher.stats.receive_seconds += time.perf_counter() - began
        raise_failure(self.engine.execute(batch, watched, keyed, starts))
        given, self.engine.planner.warnings = self.engine.planner.warnings, []
        for text in given:  # after the batch ran on every rank: a warning turned error is safe
            at_user_line(warnings.warn, text, ShoalFallbackWarning, stacklevel=1)  # at the program's line

    def _alike(self, batch: Batch) -> tuple[tuple[bytes, list[int]] | None, list[int] | None]:
        """The ``ALIKE`` command's payload and integers for ``batch`` (None: send it whole), and
        where the parts that planning cuts it into start (empty: not cut; None: not looked for)."""
        if self.config.layout != "rows":
            return None, None
        parts = segments.split(batch, self.engine.planner.new_layouts)
        if parts is None:
            return None, []
        starts = [start for start, _ in parts]
        encoded = alike.encode(batch, starts)
        if encoded is None:
            return None, starts
        payload, structure, repeated = encoded
        self.engine.flusher.stats.repeated += repeated
        return (payload, structure), starts

    def expect_draw(self, made: drawn.Recipe, shape: tuple[int, ...]) -> None:
        """Announce a draw the batches will split in ranges, so that the other ranks draw their
        parts while the program runs on (:mod:`shoal.cluster.drawn_ahead`)."""
        if self._closed or self.config.layout != "rows" or expected_range(shape, 1, self.session.ranks, self.config.min_bytes, self.config.halo_rows) is None:
            return
        with interrupts_held():
            self.session.send(Command.DRAW_AHEAD, *announce(made, shape))

    def fetch(self, view: View) -> np.ndarray:
        self._check_open()
        with interrupts_held():
            if not self.engine.at_root(view.base):  # else the other ranks have no part in it
                self.session.send(Command.FETCH, dumps(Batch(instructions=[Instruction("copy", (view,), (view,))])))
            result = self.engine.fetch(view)
        assert result is not None
        return result

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the cluster component was shut down")

    def shutdown(self) -> None:
        if self._closed:
            return
        self._closed = True
        try:
            with interrupts_held(deliver=False):
                self.session.send(Command.SHUTDOWN)
                reports = collect_reports(self.session, self.engine)
            if settings.STATS.value() and reports:
                print(format_reports(reports), file=sys.stderr)
        finally:
            self.engine.shutdown()

    def forked(self) -> None:
        """In a forked child: never use the communicators again (a forked process must not call
        MPI); the parent's ranks go on serving the parent."""
        self._closed = True
        return None

    def live_bases(self) -> int:
        return len(self.engine.planner.local)

    def statistics(self) -> list[dict]:
        """Each rank's communication totals so far (rank 0's only, before shutdown)."""
        return [report(self.engine)]


def report(engine: RankEngine) -> dict:
    """This rank's totals and trace events, for rank 0's statistics and trace."""
    stats = engine.flusher.stats
    tracer = trace.TRACER
    events = []
    if tracer is not None:
        origin = engine.origin
        events = [
            [name, category, start - origin, end - origin, tid]
            for name, category, start, end, _, tid, _ in list(tracer.spans)
            if category in ("communication", "wait", "compute", "scheduling")
        ]
    return {
        "rank": engine.rank,
        "host": engine.session.host if engine.session else "",
        "halo_sweeps": halo_sweeps(engine.planner.config),
        "round_trip": engine.round_trip,
        "messages_sent": stats.messages_sent,
        "messages_received": stats.messages_received,
        "bytes_sent": stats.bytes_sent,
        "bytes_received": stats.bytes_received,
        "wait_seconds": stats.wait_seconds,
        "communication_seconds": stats.communication_seconds,
        "busy_seconds": stats.busy_seconds,
        "batches": stats.batches,
        "replayed": stats.replayed,
        "parts": stats.parts,
        "by_number": stats.by_number,
        "repeated": stats.repeated,
        "parts_drawn": stats.parts_drawn,
        "parts_drawn_ahead": engine.ahead.taken,
        "reads": stats.reads,
        "receive_seconds": stats.receive_seconds,
        "plan_seconds": stats.plan_seconds,
        "engine_seconds": stats.engine_seconds,
        "events": events,
    }


def collect_reports(session: Session, engine: RankEngine) -> list[dict] | None:
    """Every rank's :func:`report` at rank 0 (None elsewhere); the other ranks' trace events join
    rank 0's trace, one process track per rank."""
    texts = session.gather_text(json.dumps(report(engine)))
    if texts is None:
        return None
    reports = []
    for rank, text in enumerate(texts):
        try:
            value = json.loads(text or "{}")
        except ValueError:
            continue
        if isinstance(value, dict) and value.get("rank") == rank:
            reports.append(value)
    tracer = trace.TRACER
    if tracer is not None:
        for value in reports:
            _merge_events(tracer, value, engine.origin)
    return reports


def _merge_events(tracer: trace.Tracer, value: dict, origin: float) -> None:
    rank = value["rank"]
    events = value.get("events")
    if rank == 0 or not isinstance(events, list):
        return
    pid = 1_000_000 + rank
    for event in events:
        if not (isinstance(event, list) and len(event) == 5):
            continue
        name, category, start, end, tid = event
        if not (isinstance(name, str) and category in trace.CATEGORIES and isinstance(start, float) and isinstance(end, float) and isinstance(tid, int)):
            continue
        tracer.name_track(pid, tid, f"rank {rank} thread {tid}", process=f"shoal rank {rank}")
        tracer.complete(name, category, origin + start, origin + end, {"rank": rank}, track=(pid, tid))


LINK_PROBE_KIB = PROBE_BYTES // 1024


def format_reports(reports: list[dict]) -> str:
    """What ``SHOAL_STATS=1`` prints at exit: messages, bytes and waiting per rank."""
    lines = ["shoal cluster: rank  host  messages sent/received  MiB sent/received  waiting"]
    for value in reports:
        busy = max(value["busy_seconds"], 1e-9)
        lines.append(
            f"  rank {value['rank']}  {value['host']}  {value['messages_sent']}/{value['messages_received']}  "
            f"{value['bytes_sent'] / 2**20:.1f}/{value['bytes_received'] / 2**20:.1f}  "
            f"{value['wait_seconds']:.3f} s ({100 * value['wait_seconds'] / busy:.0f}% of {value['busy_seconds']:.3f} s in flushes)"
        )
        other = value["busy_seconds"] - value["wait_seconds"] - value["engine_seconds"] - value["communication_seconds"]
        lines.append(
            f"    batches {value['batches']} ({value.get('parts', 0)} loop iterations of long ones, {value['replayed']} replayed, {value.get('by_number', 0)} sent as plan numbers; "
            f"{value.get('repeated', 0)} instructions sent as repeats of an earlier iteration)  "
            f"random parts drawn where they live {value.get('parts_drawn', 0)} ({value.get('parts_drawn_ahead', 0)} ahead)  "
            f"reads {value.get('reads', 0)}  "
            f"broadcast+decode+verify {value['receive_seconds']:.3f} s  "
            f"planning {value['plan_seconds']:.3f} s  node engine {value['engine_seconds']:.3f} s  "
            f"MPI calls {value['communication_seconds']:.3f} s  flush bookkeeping {other:.3f} s"
        )
        probe = value.get("round_trip")
        measured = f" (a {LINK_PROBE_KIB} KiB round trip took {1000 * probe:.2f} ms)" if isinstance(probe, float) else ""
        lines.append(f"    halo sweeps: {value.get('halo_sweeps')}{measured}")
    return "\n".join(lines)


def halo_sweeps(config: PlanConfig) -> str:
    """How ``config`` plans halo sweeps, in words."""
    if config.redundant_rows:
        return "redundant"
    if config.redundant_for_sweeps:
        return "own rows (redundant in a loop of one sweep)"
    return "own rows, interior first" if config.interior_first else "own rows"

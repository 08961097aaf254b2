"""What every rank does with a command from rank 0: run a batch, give its part of a view, end.

Rank 0's component (:class:`shoal.cluster.manager.ClusterManager`) and the other ranks' loop
(:func:`shoal.cluster.worker.serve`) call the same :class:`RankEngine` methods in the same
order, so all ranks plan the same operations.

A computation that fails on a rank does not stop the batch there: the rank goes on with its
messages (so no peer waits forever) and its other computations (those recorded before the failed
one may come later in its order), and reports the failure at the end of the batch, when all ranks
combine their status; rank 0 then raises it as an :class:`~shoal.engine.component.EngineError`
naming the rank.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Literal

import numpy as np

from shoal import drawn
from shoal.bytecode import Batch, View
from shoal.cluster import split_plans
from shoal.cluster.drawn_ahead import DrawsAhead
from shoal.cluster.flush import Flusher
from shoal.cluster.fp_notes import RankNotes
from shoal.cluster.layout import AnyLayout, Layout, split, sub_view
from shoal.cluster.plan import PlanConfig, Planner
from shoal.cluster.session import Session
from shoal.engine.component import Component, EngineError, described

if TYPE_CHECKING:
    from shoal.cluster.ops import Op
    from shoal.cluster.plan_cache import Template


class RankEngine:
    """One rank's planner, flusher and node engine."""

    def __init__(self, inner: Component, comm: object, plan: PlanConfig, latency_hiding: bool, session: Session) -> None:
        from mpi4py import MPI

        self.session = session
        self.origin = session.origin
        self.inner = inner
        self.comm = comm
        self.rank: int = comm.Get_rank()  # type: ignore[attr-defined]
        self.ranks: int = comm.Get_size()  # type: ignore[attr-defined]
        limit = comm.Get_attr(MPI.TAG_UB)  # type: ignore[attr-defined]
        self.tag_limit = int(limit) if limit else 32767  # MPI promises at least 32767
        self.fetch_tags = self.tag_limit // 2  # tags above this are the fetches', below the batches'
        self.recipe_tags = self.tag_limit // 2  # on the control communicator: data parts below, draws' recipes above
        self.planner = Planner(self.rank, self.ranks, plan, self.fetch_tags)
        self.notes = RankNotes(session, self.rank)
        self.round_trip: float | None = None  # seconds of the link probe, where one was taken (shoal.cluster.link)
        self.flusher = Flusher(self.notes.engine(inner), comm, self.rank, latency_hiding, self.planner.block_bytes, session.yielding)
        self.ahead = DrawsAhead(self.rank, self.ranks, plan.min_bytes, plan.halo_rows)  # parts of draws drawn while idle

    def send_data(self, batch: Batch) -> None:
        """Rank 0: each other rank's part (its own elements and halo) of every base ``batch``
        carries data for, point to point, in the order of ``batch.bases``; the batch itself went
        out without its data. A part of a remembered random draw (:mod:`shoal.drawn`) goes as
        the draw's recipe, from which the rank draws its part itself. Returns once the sends
        are done: MPI moves a large message only inside the sender's calls (a rendezvous), and
        a rank posts its receives as soon as it has decoded and verified the batch, so while
        this rank planned instead, the others waited (lattice Boltzmann at 2 ranks: rank 1
        waited 0.18 s for the first batch's data, against this wait's 0.03 s)."""
        from mpi4py import MPI

        ids = [decl.id for decl in batch.bases if decl.id in batch.data]
        if not ids:  # a loop's batches mostly: no layouts to compute
            return
        layouts = self.planner.new_layouts(batch)
        requests = []
        half = self.recipe_tags
        for number, base in enumerate(ids):
            data = batch.data[base]
            layout = layouts[base]
            made = drawn.recipe_of(data) if isinstance(layout, Layout) else None
            recipe = None if made is None else made.encode()
            for rank in range(1, self.ranks):
                if not layout.local_count(rank):
                    continue
                if recipe is not None:
                    requests.append(self.session.control.Isend([recipe, MPI.BYTE], dest=rank, tag=half + number % half))
                    self.flusher.stats.parts_drawn += 1
                else:
                    part = layout.part(data, rank)  # the send is done before this rank's engine may write a donated base
                    requests.append(self.session.control.Isend([part.view(np.uint8), MPI.BYTE], dest=rank, tag=number % half))
        if requests:
            self.flusher.wait_for(requests, "wait for data parts")

    def receive_data(self, batch: Batch, ids: list[int], layouts: dict[int, AnyLayout] | None = None) -> None:
        """Another rank: the parts :meth:`send_data` sends to it, put in ``batch.data`` (an empty
        array where it holds nothing of a base), or drawn here from a recipe; later planning
        takes them as its own part."""
        from mpi4py import MPI

        decls = {decl.id: decl for decl in batch.bases}
        if len(set(ids)) != len(ids) or any(base not in decls for base in ids):
            raise ValueError("rank 0 named data for bases the batch does not declare")
        self.planner.local_data = True
        if not ids:
            return
        if layouts is None:
            for base in ids:  # laid out as bases with data, as at rank 0 (temporaries follow their operands)
                batch.data[base] = np.empty(0, dtype=decls[base].dtype)
            layouts = self.planner.new_layouts(batch)
        half = self.recipe_tags
        for number, base in enumerate(ids):
            layout = layouts[base]
            part = np.empty(layout.local_count(self.rank), dtype=decls[base].dtype)
            if part.size:
                status = MPI.Status()
                self.session.control.Probe(source=0, tag=MPI.ANY_TAG, status=status)
                tag = status.Get_tag()
                if tag == half + number % half:
                    part = self._draw(base, decls[base].dtype, layout, part.size, tag)
                elif tag != number % half:
                    raise ValueError(f"rank 0 sent a message tagged {tag} where base {base}'s data was due")
                else:
                    self.session.control.Recv([part.view(np.uint8), MPI.BYTE], source=0, tag=number % half, status=status)
                    if status.Get_count(MPI.BYTE) != part.nbytes:
                        raise ValueError(f"rank 0 sent {status.Get_count(MPI.BYTE)} bytes of base {base}, not {part.nbytes}")
            batch.data[base] = part

    def _draw(self, base: int, dtype: np.dtype, layout: AnyLayout, count: int, tag: int) -> np.ndarray:
        """This rank's ``count`` elements of base ``base``, drawn from the recipe rank 0 sends."""
        from mpi4py import MPI

        buffer = np.empty(drawn.WIRE_BYTES, dtype=np.uint8)
        status = MPI.Status()
        self.session.control.Recv([buffer, MPI.BYTE], source=0, tag=tag, status=status)
        if status.Get_count(MPI.BYTE) != drawn.WIRE_BYTES:
            raise ValueError(f"rank 0 sent {status.Get_count(MPI.BYTE)} bytes as the recipe of base {base}, not {drawn.WIRE_BYTES}")
        made = drawn.Recipe.decode(buffer)
        if dtype != np.float64 or not isinstance(layout, Layout):
            raise ValueError(f"rank 0 sent a recipe for base {base}, which is not a float64 base split in ranges")
        begin, _ = layout.local_range(self.rank)
        self.flusher.stats.parts_drawn += 1
        found = self.ahead.take(buffer.tobytes(), begin, count)
        return made.draw(begin, count) if found is None else found

    def execute(self, batch: Batch, watched: int = 0, keyed: tuple[tuple, list[int]] | Literal[False] | None = False, starts: list[int] | None = None) -> str | None:
        """Run ``batch`` on this rank, noting the floating-point conditions ``watched`` (rank 0's
        :meth:`~shoal.cluster.fp_notes.RankNotes.claim`; ``keyed``: the batch's plan-cache key if
        known; ``starts``: where rank 0 cut it into loop iterations, if it did); returns every
        rank's failures (at rank 0), joined.

        A failed computation is reported at the end; anything else that goes wrong here (a
        message of the wrong size, a bug) leaves the ranks out of step, so it ends the job."""
        stats = self.flusher.stats
        try:
            self.notes.begin(batch, watched)
            stats.batches += 1
            parts = None
            self.planner.choose_rows(batch)
            if self.planner.config.layout == "rows":
                keyed = self.planner.keyed(batch) if keyed is False else keyed
                parts = split_plans.plan_parts(self.planner, batch, keyed, self._plan, starts)
            if parts is None:
                self._run(batch, keyed)
            else:  # one loop iteration at a time, alike ones replayed (shoal.cluster.segments)
                stats.parts += len(parts)
                self._run_parts(parts)
        except BaseException as error:  # Ctrl-C included: the other ranks would wait for us forever
            self.session.abort(f"cluster rank {self.rank} ({self.session.host}) failed: {described(error)}", error=error)
            raise
        failure, self.flusher.failure = self.flusher.failure, None
        kept = self.planner.template is not None
        failures, everywhere = self.session.gather_status(None if failure is None else f"rank {self.rank}: {described(failure)}", kept)
        if everywhere and self.planner.key is not None:
            self.planner.cache.number(self.planner.key)  # later batches of its key go as REPLAY
        malformed = self.notes.finish()
        if failures is None:
            return None
        found = [text for text in (*failures, malformed) if text]
        return "; ".join(found) if found else None

    def _run(self, batch: Batch, keyed: tuple[tuple, list[int]] | Literal[False] | None) -> None:
        """Plan and run the whole of ``batch``."""
        ops, template = self._plan(batch, keyed)
        self.notes.planned(ops)
        self.flusher.run(ops, template)

    def _plan(self, batch: Batch, keyed: tuple[tuple, list[int]] | Literal[False] | None, kept: Template | None = None) -> tuple[list[Op], Template | None]:
        """``batch``'s operations and the cached plan they follow (if kept; ``kept``: its key's
        template, known)."""
        stats = self.flusher.stats
        began = time.perf_counter()
        ops = self.planner.plan(batch, keyed, kept)
        stats.plan_seconds += time.perf_counter() - began
        stats.replayed = self.planner.cache.hits
        return ops, self.planner.template

    def _run_parts(self, planned: list[tuple[int, list[Op], Template | None]]) -> None:
        """Run the parts of a batch (each with its first instruction's position, operations and
        template). Where a rank exchanges data within the loop, each
        iteration runs as a flush of its own and follows its cached dependency graph (Jacobi's
        sweeps, one node-engine batch each, at 2 ranks: 0.17 -> 0.13 s against one flush of all
        of them). Where only a reduction's results travel, at its end, the parts run as one
        flush: its node engine then fuses computations across iterations (Black-Scholes' 30
        days at 2 ranks: 1.27 s a part at a time, 0.82 s as one flush)."""
        if any(op.kind != "compute" and not op.late for _, ops, _ in planned for op in ops):
            for number, (start, ops, template) in enumerate(planned):
                self.notes.planned(ops, start)
                self.flusher.run(ops, template, number == len(planned) - 1)
            return
        everything: list[Op] = []
        for start, ops, _ in planned:
            self.notes.planned(ops, start)
            everything += ops
        self.flusher.run(everything)

    def at_root(self, base: int) -> bool:
        """True if rank 0 holds every element of ``base``: reading it takes no other rank (a
        loop's test of a reduced value, read every iteration)."""
        layout = self.planner.layouts.get(base)
        return layout is not None and layout.at_root

    def fetch(self, view: View) -> np.ndarray | None:
        """The contents of ``view`` at rank 0 (None elsewhere), assembled from its owners."""
        began = time.perf_counter()
        self.flusher.stats.reads += 1
        try:
            return self._fetch(view)
        except BaseException as error:  # as in execute: a rank out of step ends the job
            self.session.abort(f"cluster rank {self.rank} ({self.session.host}) failed: {described(error)}", error=error)
            raise
        finally:  # its waiting counts, so does its time
            self.flusher.stats.busy_seconds += time.perf_counter() - began

    def _fetch(self, view: View) -> np.ndarray | None:
        from mpi4py import MPI

        planner = self.planner
        layout = planner.layouts[view.base]
        result = np.empty(view.shape, dtype=view.dtype) if self.rank == 0 else None
        requests = []
        kept = []
        pieces = split([(view, layout)], view.shape, 1 << 30)
        for number, (box, (owner,)) in enumerate(pieces):
            tag = self.fetch_tags + number % (self.tag_limit - self.fetch_tags)
            part = sub_view(view, box)
            index = tuple(slice(low, high) for low, high in box)
            if owner == self.rank:
                data = np.require(self.inner.fetch(planner.local_view(part)), requirements="C")
                if self.rank == 0:
                    assert result is not None
                    result[index] = data
                else:
                    kept.append(data)
                    requests.append(self.comm.Isend([data.reshape(-1).view(np.uint8), MPI.BYTE], dest=0, tag=tag))  # type: ignore[attr-defined]
            elif self.rank == 0:
                buffer = np.empty(part.shape, dtype=view.dtype)
                kept.append((index, buffer))
                requests.append(self.comm.Irecv([buffer.reshape(-1).view(np.uint8), MPI.BYTE], source=owner, tag=tag))  # type: ignore[attr-defined]
        if requests:
            self.flusher.wait_for(requests, "wait for fetch")
        if self.rank == 0:
            assert result is not None
            for item in kept:
                index, buffer = item
                result[index] = buffer
        return result

    def shutdown(self) -> None:
        self.inner.shutdown()


def raise_failure(failure: str | None) -> None:
    if failure is not None:
        raise EngineError(f"a batch failed on the cluster: {failure}")

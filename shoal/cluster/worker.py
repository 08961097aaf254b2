"""The loop of every rank but 0: run rank 0's commands until it says the program ended.

Every payload is decoded from the wire format and verified against the bases this rank knows
before it is planned or touches memory (a batch once per structure, :mod:`shoal.cluster.verified`). An error of the loop itself (a malformed command, a bug)
ends the whole job at once with a message naming the rank, as ``mpiexec`` would for a rank that
died; a failing computation is reported to rank 0 at the end of its batch instead
(:mod:`shoal.cluster.rank`).

Ctrl-C is the program's, and the program runs at rank 0: these ranks ignore it and follow rank 0,
which raises ``KeyboardInterrupt`` at the user's line and shuts them down (or, interrupted inside
a batch, ends the job). A rank that took it itself could stop in the middle of a batch while
another waits in MPI, where no signal handler runs.
"""

from __future__ import annotations

import sys
import time

from shoal.bytecode import loads, verify
from shoal.cluster import alike, replayed
from shoal.cluster.manager import ClusterConfig, collect_reports, rank_engine
from shoal.cluster.session import Command, Session
from shoal.cluster.verified import VerifiedBatches
from shoal.interrupts import ignore_interrupts


def serve(session: Session) -> int:
    """Run commands from rank 0 until it shuts the cluster down; returns the exit code."""
    from shoal import settings, trace
    from shoal.engine import create, stack_names

    ignore_interrupts()
    if settings.TRACE.value():
        trace.start()  # no file: the events go to rank 0's trace at the end
    try:
        names = stack_names()
        inner = create(":".join(names[names.index("cluster") + 1 :]))  # while rank 0 starts up
    except Exception as error:
        session.abort(f"cluster rank {session.rank} could not start: {type(error).__name__}: {error}")
        return 1
    try:
        # Rank 0 starts the cluster when the program first uses Shoal's arrays, and a program
        # that never does ends it at exit: the link is timed (collectively) only on ``START``.
        first, payload, ints = session.receive()
        if first is Command.SHUTDOWN and not payload and not ints:
            inner.shutdown()
            session.gather_text(None)
            return 0
        if first is not Command.START or payload or ints:
            raise ValueError(f"rank 0 sent {first.name} before starting the cluster")
        engine = rank_engine(session, inner, ClusterConfig.from_settings())
    except BaseException as error:
        session.abort(f"cluster rank {session.rank} ({session.host}) failed: {type(error).__name__}: {error}", error=error)
        return 1
    try:
        stats = engine.flusher.stats
        verified = VerifiedBatches()
        while True:
            command, payload, ints = session.receive()
            if command is Command.EXECUTE or command is Command.ALIKE:
                began = time.perf_counter()
                if not ints:
                    raise ValueError("rank 0 sent a batch without the conditions it watches")
                watched, ids, starts, origins = ints[0], ints[1:], None, None
                if command is Command.EXECUTE:
                    batch = loads(payload)
                else:
                    count = ints[1] if len(ints) > 1 else -1
                    if not 0 <= count <= len(ints) - 2:
                        raise ValueError(f"rank 0 named data for {count} bases in an ALIKE command of {len(ints)} integers")
                    ids = ints[2 : 2 + count]
                    batch, starts, origins = alike.decode(payload, ints[2 + count :])
                    stats.repeated += sum(1 for origin in origins if origin >= 0)
                if len(ids) > len(batch.bases):
                    raise ValueError(f"rank 0 named data for {len(ids)} bases of a batch declaring {len(batch.bases)}")
                # Keyed once, before its data arrives (only once the batch is verified), for
                # verification and planning: the key records which declarations carry data.
                keyed = engine.planner.keyed(batch, set(ids))
                verified.check(batch, engine.planner.decls, engine.planner.layouts, keyed, origins)
                checked = time.perf_counter()
                engine.receive_data(batch, ids)
                ended = time.perf_counter()
                stats.receive_seconds += ended - began
                if trace.TRACER is not None:
                    trace.TRACER.complete("decode and verify the batch", "scheduling", began, checked, {"instructions": len(batch.instructions)})
                    trace.TRACER.complete("receive or draw its data", "communication", checked, ended, {"bases": len(ids)})
                engine.execute(batch, watched, keyed, starts)
            elif command is Command.REPLAY:
                began = time.perf_counter()
                if not ints:
                    raise ValueError("rank 0 sent a replay without the conditions it watches")
                batch, keyed, ids, layouts = replayed.receive(engine.planner, ints[1:], payload)
                engine.receive_data(batch, ids, layouts)
                stats.receive_seconds += time.perf_counter() - began
                stats.by_number += 1
                engine.execute(batch, ints[0], keyed)
            elif command is Command.DRAW_AHEAD:
                engine.ahead.draw(payload, ints)
            elif ints:
                raise ValueError(f"rank 0 sent integers with {command.name}")
            elif command is Command.FETCH:
                request = loads(payload)
                verify(request, engine.planner.decls)
                if len(request.instructions) != 1 or request.bases or request.data:
                    raise ValueError("a fetch names one view")
                engine.fetch(request.instructions[0].outputs[0])
            else:
                collect_reports(session, engine)
                engine.shutdown()
                return 0
    except BaseException as error:
        sys.stderr.write(f"shoal: cluster rank {session.rank} ({session.host}) failed: {type(error).__name__}: {error}\n")
        session.abort(f"ending every rank of the job because rank {session.rank} failed", error=error)
        return 1

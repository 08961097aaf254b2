"""``python -m shoal trace-summary out.json``: where the time of a traced run went.

Each event's **self time** (its duration less that of the events nested in it on the same
track) is added to its category, so nested events are not counted twice: a batch's own
bookkeeping counts as scheduling, the block operations it runs inline as compute. ``idle`` is
the time engine worker threads spent waiting during batches: for every worker thread, the
batches' total time less the compute time on that thread.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import Any

#: The categories of :data:`shoal.trace.CATEGORIES`, and ``idle``.
ORDER = ("compute", "scheduling", "compile", "idle", "communication", "wait", "task")
WORKER_THREAD_PREFIX = "shoal-worker"
BATCH_EVENT = "execute batch"


class TraceError(ValueError):
    """The file is not a Chrome trace-event document this command can read."""


def load(path: str) -> list[dict[str, Any]]:
    """The events of the trace file at ``path``, checked for the fields the summary reads."""
    try:
        with open(path, encoding="utf-8") as file:
            document = json.load(file)
    except (OSError, ValueError) as error:
        raise TraceError(f"cannot read trace {path!r}: {error}") from error
    events = document.get("traceEvents") if isinstance(document, dict) else document
    if not isinstance(events, list):
        raise TraceError(f"{path!r} holds no list of trace events")
    for event in events:
        if not isinstance(event, dict) or event.get("ph") not in ("X", "M"):
            continue
        if event["ph"] == "X" and not all(_number(event.get(key)) for key in ("ts", "dur")):
            raise TraceError(f"{path!r}: a complete event without numeric ts and dur: {event!r}"[:300])
    return [event for event in events if isinstance(event, dict)]


def _number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def self_times(events: Iterable[Mapping[str, Any]]) -> list[tuple[Mapping[str, Any], float]]:
    """Every complete event with its self time in microseconds (nesting per track)."""
    tracks: dict[tuple[Any, Any], list[Mapping[str, Any]]] = defaultdict(list)
    for event in events:
        if event.get("ph") == "X":
            tracks[(event.get("pid"), event.get("tid"))].append(event)
    result: list[tuple[Mapping[str, Any], float]] = []
    for track in tracks.values():
        track.sort(key=lambda event: (event["ts"], -event["dur"]))
        own = [float(event["dur"]) for event in track]
        stack: list[int] = []
        for index, event in enumerate(track):
            while stack and track[stack[-1]]["ts"] + track[stack[-1]]["dur"] <= event["ts"]:
                stack.pop()
            if stack:
                own[stack[-1]] -= float(event["dur"])
            stack.append(index)
        result.extend((event, max(0.0, seconds)) for event, seconds in zip(track, own))
    return result


def totals(events: list[Mapping[str, Any]]) -> dict[str, float]:
    """Seconds per category (:data:`ORDER`), from self times; ``idle`` as the module says."""
    sums = dict.fromkeys(ORDER, 0.0)
    names = {(e.get("pid"), e.get("tid")): e.get("args", {}).get("name", "") for e in events if e.get("ph") == "M" and e.get("name") == "thread_name"}
    workers = {track for track, name in names.items() if str(name).startswith(WORKER_THREAD_PREFIX)}
    worker_compute: dict[tuple[Any, Any], float] = defaultdict(float)
    for event, micro in self_times(events):
        category = event.get("cat")
        if category in sums:
            sums[category] += micro / 1e6
        track = (event.get("pid"), event.get("tid"))
        if category == "compute" and track in workers:
            worker_compute[track] += micro / 1e6
    batches = sum(float(e["dur"]) for e in events if e.get("ph") == "X" and e.get("name") == BATCH_EVENT) / 1e6
    sums["idle"] = sum(max(0.0, batches - worker_compute[track]) for track in workers)
    return sums


def format_totals(sums: Mapping[str, float]) -> str:
    """The totals as a table with each category's share."""
    whole = sum(sums.values()) or 1.0
    lines = [f"{'category':<14} {'seconds':>10} {'share':>7}"]
    for category in ORDER:
        lines.append(f"{category:<14} {sums.get(category, 0.0):>10.4f} {100 * sums.get(category, 0.0) / whole:>6.1f}%")
    return "\n".join(lines)


def main(arguments: list[str]) -> int:
    """Print the totals of the trace file named in ``arguments``; 2 on a usage or file error."""
    import sys

    if len(arguments) != 1 or arguments[0].startswith("-"):
        sys.stderr.write("usage: python -m shoal trace-summary TRACE.json\n")
        return 2
    try:
        events = load(arguments[0])
    except TraceError as error:
        sys.stderr.write(f"shoal: error: {error}\n")
        return 2
    print(format_totals(totals(events)))
    return 0


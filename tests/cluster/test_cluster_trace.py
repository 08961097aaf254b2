"""Every rank's communication and waiting show in the trace and in ``SHOAL_STATS``."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from cluster.harness import EXAMPLES, environment, run

pytestmark = pytest.mark.full


def test_trace_and_statistics_show_each_ranks_messages_and_waiting(tmp_path: Path) -> None:
    trace = tmp_path / "trace.json"
    result = run(2, EXAMPLES / "jacobi_stencil.py", "300", "--iterations", "10", env=environment(SHOAL_TRACE=str(trace), SHOAL_STATS="1"))
    assert result.returncode == 0, result.stderr
    events = json.loads(trace.read_text())["traceEvents"]
    names = {event["pid"]: event["args"]["name"] for event in events if event["ph"] == "M" and event["name"] == "process_name"}
    ranks = [pid for pid, name in names.items() if name == "shoal rank 1"]
    assert len(ranks) == 1 and len(names) == 2
    categories = Counter((event["pid"], event["cat"]) for event in events if event["ph"] == "X")
    for pid in names:
        assert categories[(pid, "communication")] > 0 and categories[(pid, "wait")] > 0
    at_rank_1 = Counter(event["name"] for event in events if event["ph"] == "X" and event["pid"] == ranks[0])
    assert at_rank_1["decode and verify the batch"] > 0 and at_rank_1["receive or draw its data"] > 0
    assert at_rank_1["receive a command"] > 0
    rows = re.findall(r"rank (\d)  \S+  (\d+)/(\d+)  \S+  ([\d.]+) s \((\d+)% of", result.stderr)
    assert [row[0] for row in rows] == ["0", "1"]
    for _, sent, received, _, _ in rows:
        assert int(sent) > 0 and int(received) > 0

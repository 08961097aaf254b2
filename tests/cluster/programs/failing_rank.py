"""``python failing_rank.py HOW program.py ...``: ``python -m shoal program.py ...`` on a rank
whose cluster code fails in its third batch: ``HOW`` is ``raise`` (the rank's flush raises: a
bug) or ``compute`` (its node engine raises: a failed computation)."""

import sys

from shoal.cluster import flush

how = sys.argv[1]
calls = {"run": 0, "execute": 0}

if how == "raise":
    original_run = flush.Flusher.run

    def failing_run(self, ops, template=None, last=True):
        calls["run"] += 1
        if calls["run"] == 3:
            raise RuntimeError("injected failure in the flush")
        return original_run(self, ops, template, last)

    flush.Flusher.run = failing_run
else:
    original_submit = flush.Flusher.submit_batch

    def failing_submit(self):
        calls["execute"] += 1
        if calls["execute"] == 3 and self.failure is None:
            self.failure = ArithmeticError("injected failure in a computation")
        return original_submit(self)

    flush.Flusher.submit_batch = failing_submit

from shoal.__main__ import main  # noqa: E402

sys.exit(main(sys.argv[2:]))

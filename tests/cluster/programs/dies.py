"""A program during which one rank (the last) dies: killed by a signal, or raising."""

import os
import signal
import sys

import numpy as np

how = sys.argv[1]
a = np.ones((400, 400))
print(f"first: {float(a.sum())!r}", flush=True)
if how == "kill":
    import shoal.cluster.plan as plan

    original = plan.Planner.plan

    def plan_and_die(self, batch):  # only rank 0 runs this file: it kills the last rank
        os.kill(int(os.environ["SHOAL_TEST_VICTIM"]), signal.SIGKILL)
        return original(self, batch)

    plan.Planner.plan = plan_and_die
for _ in range(50):
    a = a * 1.0001 + 1
print(f"second: {float(a.sum())!r}", flush=True)

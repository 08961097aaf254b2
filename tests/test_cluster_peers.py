"""Which ranks a rank watches: those sharing its kernel and pid namespace (shoal.cluster.peers)."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np

from shoal.cluster import peers


def test_a_rank_watches_the_ranks_of_its_kernel_and_pid_namespace() -> None:
    me = peers.identity()
    assert me[4] == os.getpid() and me[:4].any()
    elsewhere = me.copy()
    elsewhere[0] ^= 1  # another boot id: another machine
    other_namespace = me.copy()
    other_namespace[3] += 1
    beside = me.copy()
    beside[4] = 12345
    table = np.stack([me, elsewhere, other_namespace, beside])
    assert peers.neighbours(table, 0) == {3: 12345}
    assert peers.neighbours(table, 1) == {}
    unknown = np.zeros_like(table)  # a rank that could not say where it runs watches nobody
    assert peers.neighbours(unknown, 0) == {}


def test_an_armed_watch_ends_the_process_when_a_peer_ends_and_a_disarmed_one_does_not() -> None:
    program = (
        "import subprocess, sys, time\n"
        "from shoal.cluster import peers\n"
        "peers.GRACE_SECONDS = 0.1\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(0.5)'])\n"
        "watch = peers.PeerWatch(0, 'here', {1: child.pid})\n"
        "if sys.argv[1] == 'disarmed':\n"
        "    watch.disarm()\n"
        "child.wait()\n"
        "time.sleep(2)\n"
        "print('outlived it')\n"
    )
    armed = subprocess.run([sys.executable, "-c", program, "armed"], capture_output=True, text=True, timeout=60)
    assert armed.returncode == 1
    assert armed.stdout == ""
    assert armed.stderr.startswith("shoal: cluster rank 1 (pid ") and armed.stderr.endswith("ended before the job did; ending rank 0 (here)\n")
    disarmed = subprocess.run([sys.executable, "-c", program, "disarmed"], capture_output=True, text=True, timeout=60)
    assert (disarmed.returncode, disarmed.stdout, disarmed.stderr) == (0, "outlived it\n", "")

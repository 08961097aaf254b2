"""A send whose delivery needs the sender's MPI calls arrives while the sender computes.

Run as ``mpiexec -n 2 python send_progress.py FLAG`` with MPICH's 8 KiB shared-memory cells: an
8,176-byte message then travels in two cells, the second sent only from an MPI call of the
sender. Rank 0 posts the send, hands it to :class:`shoal.cluster.flush.SendProgress` and then
makes no MPI call until rank 1 has written ``FLAG`` (it has the message) or 60 seconds pass.
"""

import sys
import time
from pathlib import Path

import numpy as np
from mpi4py import MPI

from shoal.cluster.flush import SendProgress

comm = MPI.COMM_WORLD
flag = Path(sys.argv[1])
data = np.arange(1022, dtype=np.float64)
if comm.Get_rank() == 0:
    progress = SendProgress()
    request = comm.Isend([data, MPI.DOUBLE], dest=1, tag=7)
    progress.begin([request])
    deadline = time.monotonic() + 60
    while not flag.exists() and time.monotonic() < deadline:
        time.sleep(0.001)
    progress.end()
    print("arrived while computing" if flag.exists() else "not delivered until the sender called MPI")
    request.Wait()
else:
    received = np.empty_like(data)
    comm.Recv([received, MPI.DOUBLE], source=0, tag=7)
    assert np.array_equal(received, data)
    flag.write_text("received")
comm.Barrier()

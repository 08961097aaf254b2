"""A rank's last line reaches the launcher before the rank aborts the job.

``mpiexec`` forwards each rank's stderr from a pipe and ends every process on ``MPI_Abort``; a
line still in the pipe then is lost, and the failed rank goes unnamed (seen in 3 of 110 runs of
a 3-rank job that wrote a line and aborted at once; 0 of 110 after waiting for the pipe to empty).
"""

from __future__ import annotations

import array
import fcntl
import os
import termios
import threading
import time
from pathlib import Path

from shoal.cluster.session import _wait_until_read


def unread(descriptor: int) -> int:
    count = array.array("i", [0])
    fcntl.ioctl(descriptor, termios.FIONREAD, count)
    return count[0]


def test_the_wait_ends_once_the_reader_took_the_line() -> None:
    read_end, write_end = os.pipe()
    taken: list[bytes] = []

    def slow_reader() -> None:
        time.sleep(0.1)
        taken.append(os.read(read_end, 4096))

    with os.fdopen(write_end, "w") as stream:
        stream.write("shoal: cluster rank 2 failed\n")
        stream.flush()
        reader = threading.Thread(target=slow_reader)
        reader.start()
        _wait_until_read(stream)
        assert unread(write_end) == 0
        assert taken == [b"shoal: cluster rank 2 failed\n"]
        reader.join()
    os.close(read_end)


def test_a_pipe_nobody_reads_delays_the_abort_a_bounded_time() -> None:
    read_end, write_end = os.pipe()
    with os.fdopen(write_end, "w") as stream:
        stream.write("never read\n")
        stream.flush()
        _wait_until_read(stream, seconds=0.05)
        assert unread(write_end) == len("never read\n")
    os.close(read_end)


def test_streams_that_are_not_pipes_are_left_alone(tmp_path: Path) -> None:
    with open(tmp_path / "log", "w") as stream:
        stream.write("a file\n")
        _wait_until_read(stream, seconds=600)  # past the test timeout unless it returns at once
    _wait_until_read(object(), seconds=600)

"""The node-wide semaphore: counting, waiting, timeouts, and release when a holder dies."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading

import pytest

from shoal.threads.semaphore import NodeSemaphore


def test_tokens_are_counted_and_given_back(semaphore_path):
    semaphore = NodeSemaphore(4, semaphore_path)
    first = semaphore.acquire(3)
    assert first.count == 3
    assert semaphore.tokens_in_use() == 3
    second = semaphore.acquire(1)
    assert semaphore.tokens_in_use() == 4
    first.release()
    second.release()
    assert semaphore.tokens_in_use() == 0


def test_requests_above_the_size_are_clamped(semaphore_path):
    grant = NodeSemaphore(2, semaphore_path).acquire(64)
    assert grant.count == 2
    grant.release()


def test_a_full_semaphore_times_out_and_holds_nothing_after(semaphore_path):
    semaphore = NodeSemaphore(2, semaphore_path)
    held = semaphore.acquire(1)
    with pytest.raises(TimeoutError, match="thread tokens"):
        semaphore.acquire(2, timeout=0.05)
    assert semaphore.tokens_in_use() == 1  # the failed request kept no partial tokens
    held.release()


def test_threads_of_one_process_exclude_each_other(semaphore_path):
    semaphore = NodeSemaphore(2, semaphore_path)
    active, peak, lock = [0], [0], threading.Lock()
    barrier = threading.Barrier(6)

    def region() -> None:
        barrier.wait()
        for _ in range(20):
            grant = semaphore.acquire(1)
            with lock:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            with lock:
                active[0] -= 1
            grant.release()

    threads = [threading.Thread(target=region) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert 1 <= peak[0] <= 2
    assert semaphore.tokens_in_use() == 0


@pytest.mark.parametrize("bad", [0, -1, 1.0, True])
def test_bad_sizes_and_counts_are_rejected(semaphore_path, bad):
    with pytest.raises(ValueError, match="semaphore size"):
        NodeSemaphore(bad, semaphore_path)
    with pytest.raises(ValueError, match="token count"):
        NodeSemaphore(2, semaphore_path).acquire(bad)


def test_a_forked_child_does_not_keep_the_parents_tokens(semaphore_path):
    semaphore = NodeSemaphore(1, semaphore_path)
    grant = semaphore.acquire(1)
    read_end, write_end = os.pipe()
    ready_read, ready_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child lives on after the parent gives its token back
        os.write(ready_write, b"r")
        os.read(read_end, 1)
        os._exit(0)
    os.close(read_end)
    os.close(ready_write)
    try:
        assert os.read(ready_read, 1) == b"r"
        grant.release()
        assert semaphore.tokens_in_use() == 0
        semaphore.acquire(1, timeout=5).release()
    finally:
        os.write(write_end, b"x")
        os.close(write_end)
        os.close(ready_read)
        os.waitpid(pid, 0)


_HOLDER = textwrap.dedent(
    """
    import sys, time
    from shoal.threads.semaphore import NodeSemaphore
    grant = NodeSemaphore(int(sys.argv[2]), sys.argv[1]).acquire(int(sys.argv[3]))
    print("holding", grant.count, flush=True)
    time.sleep(600)
    """
)


def _start_holder(path: str, size: int, count: int) -> subprocess.Popen:
    holder = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, path, str(size), str(count)], stdout=subprocess.PIPE, text=True
    )
    assert holder.stdout.readline().split() == ["holding", str(count)]
    return holder


@pytest.mark.full
def test_tokens_of_a_sigkilled_holder_come_back(semaphore_path):
    semaphore = NodeSemaphore(2, semaphore_path)
    holder = _start_holder(semaphore_path, 2, 2)
    try:
        assert semaphore.tokens_in_use() == 2
        with pytest.raises(TimeoutError):
            semaphore.acquire(1, timeout=0.05)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        holder.stdout.close()
    assert semaphore.tokens_in_use() == 0
    semaphore.acquire(2, timeout=5).release()


@pytest.mark.full
def test_a_waiter_blocked_on_a_holder_proceeds_when_the_holder_is_killed(semaphore_path):
    semaphore = NodeSemaphore(2, semaphore_path)
    holder = _start_holder(semaphore_path, 2, 2)
    outcome: list[object] = []

    def wait_for_tokens() -> None:
        try:
            grant = semaphore.acquire(2, timeout=30)
            outcome.append(grant.count)
            grant.release()
        except TimeoutError as error:
            outcome.append(error)

    waiter = threading.Thread(target=wait_for_tokens)
    waiter.start()
    try:
        waiter.join(0.2)
        assert waiter.is_alive()  # really blocked behind the holder
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
        holder.stdout.close()
    waiter.join(30)
    assert outcome == [2]
    assert semaphore.tokens_in_use() == 0

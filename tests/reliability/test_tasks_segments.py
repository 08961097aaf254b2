"""Task segments in /dev/shm, which every user of the machine shares: names no one can
guess, nothing attached that this runtime did not create, nothing mapped that another
user owns or may write, and a fallback to sending by value when a segment cannot be made."""

from __future__ import annotations

import errno
import os
import subprocess
import sys

import numpy as np
import pytest
from task_fixtures import planting_dead_segments

import shoal.tasks as tasks
from shoal.tasks import IN, task, wait_on
from shoal.tasks import shm as shm_store
from shoal.tasks.placement import AUTO_SHARE_MIN_BYTES

pytestmark = [pytest.mark.full, pytest.mark.timeout(90)]

NOBODY = 65534


@task(a={"direction": IN, "rro": True})
def total(a):
    return int(a.sum()), bool(a.flags.writeable)


@task()
def plain_total(a):
    return int(a.sum()), bool(a.flags.writeable)


def _plant(path: str, nbytes: int, user: int | None) -> None:
    """Create ``path`` as ``user`` (another user when given) with a ready flag and 0x01 bytes,
    as an attacker who guessed the next segment name would."""
    script = (
        f"umask 022; {{ printf 'SALREADY'; head -c 56 /dev/zero; "
        f"head -c {nbytes} /dev/zero | tr '\\000' '\\001'; }} > {path}"
    )
    extra = {} if user is None else {"user": user, "group": user, "extra_groups": []}
    subprocess.run(["sh", "-c", script], check=True, **extra)


ATTACKERS = [
    pytest.param(None, id="same-user"),
    pytest.param(
        NOBODY,
        id="second-user",
        marks=pytest.mark.skipif(
            os.geteuid() != 0, reason="running the attacker as another user (nobody) needs root"
        ),
    ),
]


@pytest.mark.parametrize("attacker", ATTACKERS)
def test_planted_next_segment_is_refused_and_the_result_is_right(runtime, monkeypatch, attacker):
    data = np.ones(1 << 15, dtype=np.int64)
    planted: list[str] = []
    choose = shm_store.segment_name

    def guessed(job, data_id, version):
        name = choose(job, data_id, version)
        _plant(os.path.join(shm_store.SHM_DIR, name), data.nbytes, attacker)
        planted.append(name)
        return name

    monkeypatch.setattr(shm_store, "segment_name", guessed)
    try:
        with pytest.warns(tasks.SharedMemoryFallbackWarning, match=r"already exists .*never attached"):
            future = total(data)
        assert wait_on(future) == (32768, True)  # by value: the planted bytes were never read
        assert runtime.segment_names == []
        (name,) = planted
        owner = os.stat(os.path.join(shm_store.SHM_DIR, name)).st_uid
        assert owner == (os.geteuid() if attacker is None else attacker)  # left alone
    finally:
        for name in planted:
            shm_store.unlink(name)


def test_segment_names_are_unguessable(runtime):
    data = np.arange(100.0)
    first = wait_on(total(data))
    second_data = np.arange(100.0)
    wait_on(total(second_data))
    names = runtime.segment_names
    assert first[0] == 4950 and len(names) == 2
    tails = [name.rsplit("-", 1)[1] for name in names]
    assert all(len(tail) == 16 for tail in tails) and tails[0] != tails[1]
    assert len(runtime.job.split(".", 1)[1]) == 16  # 64 random bits in the job part too
    tasks.delete([data, second_data])


@pytest.mark.parametrize(
    "attacker",
    [
        pytest.param("mode", id="group-and-world-writable"),
        pytest.param("symlink", id="symlink"),
        pytest.param(
            NOBODY,
            id="second-user",
            marks=pytest.mark.skipif(
                os.geteuid() != 0, reason="creating a segment as another user (nobody) needs root"
            ),
        ),
    ],
)
def test_attach_refuses_segments_it_cannot_trust(tmp_path, attacker):
    name = shm_store.segment_name(shm_store.new_job_name(), 1, 0)
    path = os.path.join(shm_store.SHM_DIR, name)
    ref = shm_store.SegmentRef(name, np.dtype(np.int64).str, (4,))
    try:
        if attacker == "symlink":
            target = tmp_path / "elsewhere"
            target.write_bytes(b"SALREADY" + bytes(56) + bytes(32))
            os.symlink(target, path)
            expected: type[OSError] = OSError
            match = "Too many levels of symbolic links|symbolic"
        elif attacker == "mode":
            _plant(path, 32, None)
            os.chmod(path, 0o666)
            expected, match = shm_store.UntrustedSegmentError, "other users may write it"
        else:
            _plant(path, 32, attacker)
            expected, match = shm_store.UntrustedSegmentError, rf"owned by uid {NOBODY}, not by this user"
        with pytest.raises(expected, match=match):
            shm_store.attach(ref, timeout=1.0)
        with pytest.raises(expected):
            shm_store.attach(ref, timeout=1.0, private=True)
    finally:
        shm_store.unlink(name)


@pytest.mark.skipif(os.geteuid() != 0, reason="creating a segment as another user (nobody) needs root")
def test_sweeping_dead_jobs_leaves_other_users_files_alone():
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    name = f"shoal-{dead.stdout.strip()}.{'a' * 16}-1-v0-{'b' * 16}"
    path = os.path.join(shm_store.SHM_DIR, name)
    with planting_dead_segments():
        _plant(path, 8, NOBODY)
        try:
            shm_store.sweep_dead_jobs()
            assert os.path.exists(path)
        finally:
            shm_store.unlink(name)


def _failing_pwrite(fd, data, offset):
    raise OSError(errno.ENOSPC, "No space left on device")


def test_failed_segment_write_falls_back_to_sending_by_value(runtime, monkeypatch):
    data = np.ones(1 << 12, dtype=np.int64)
    monkeypatch.setattr(os, "pwrite", _failing_pwrite)
    with pytest.warns(tasks.SharedMemoryFallbackWarning, match=r"No space left on device.*by value"):
        future = total(data)
    monkeypatch.undo()
    assert wait_on(future) == (4096, True)
    assert runtime.segment_names == []
    assert wait_on(total(data)) == (4096, True)  # refused once, sent by value from then on


def test_failed_snapshot_write_falls_back_to_sending_by_value(runtime, monkeypatch):
    data = np.ones(AUTO_SHARE_MIN_BYTES // 8, dtype=np.int64)
    monkeypatch.setattr(os, "pwrite", _failing_pwrite)
    with pytest.warns(tasks.SharedMemoryFallbackWarning, match="No space left on device"):
        future = plain_total(data)
    monkeypatch.undo()
    assert wait_on(future) == (data.size, True)
    assert runtime.segment_names == []

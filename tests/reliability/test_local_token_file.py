"""The node-wide thread-token file cannot be squatted or redirected by another user: a file of
theirs (even one whose turnstile byte they hold) or a link they planted gives one warning and a
semaphore of this process's own, never a hang and never a file made where the link points."""

from __future__ import annotations

import os
import stat
import warnings

import pytest

from reliability.local_files_helpers import (
    give_to_other_user,
    lock_held_by_other_user,
    needs_root,
    shared_sticky_directory,
)
from shoal.errors import ShoalUnsafeFileWarning
from shoal.threads import semaphore as semaphore_module
from shoal.threads.coordination import parallel_region
from shoal.threads.semaphore import NodeSemaphore

BOUND_SECONDS = 20.0  # far above a free acquire: turns a hang into TimeoutError


def squatted_file(directory) -> str:
    """A token file made by the other user, readable and writable by everyone."""
    path = directory / "tokens"
    path.write_bytes(b"")
    os.chmod(path, 0o666)
    give_to_other_user(path)
    return str(path)


def test_a_token_file_squatted_by_another_user_holding_the_turnstile_does_not_hang(tmp_path, monkeypatch):
    needs_root()
    path = squatted_file(shared_sticky_directory(tmp_path / "shm"))
    monkeypatch.setenv("SHOAL_SEMAPHORE_PATH", path)
    monkeypatch.setenv("SHOAL_COMPOSABILITY", "exclusive")
    with lock_held_by_other_user(path, byte=0):
        with pytest.warns(ShoalUnsafeFileWarning, match="belongs to uid 65534"):
            with parallel_region(2, timeout=BOUND_SECONDS) as tokens:
                assert tokens >= 1


def test_a_token_file_planted_as_a_link_is_not_followed(tmp_path, monkeypatch):
    needs_root()
    shared = shared_sticky_directory(tmp_path / "shm")
    chosen = tmp_path / "chosen-by-the-other-user"
    chosen.mkdir()
    target = chosen / "made-by-shoal"
    link = shared / "tokens"
    link.symlink_to(target)
    give_to_other_user(link, chosen)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        NodeSemaphore(2, str(link)).acquire(1, timeout=BOUND_SECONDS).release()
    assert not target.exists() and link.is_symlink()
    assert [warning.category for warning in caught] == [ShoalUnsafeFileWarning]
    assert "symbolic link" in str(caught[0].message)


def test_a_per_user_directory_made_by_another_user_is_refused(tmp_path, monkeypatch):
    needs_root()
    shared = shared_sticky_directory(tmp_path / "shm")
    squatted = shared / f"shoal-threads-{os.geteuid()}"
    squatted.mkdir()
    os.chmod(squatted, 0o777)
    path = squatted_file(squatted)
    give_to_other_user(squatted)
    monkeypatch.setattr(semaphore_module, "per_user_path", lambda: path)
    monkeypatch.delenv("SHOAL_SEMAPHORE_PATH", raising=False)
    with lock_held_by_other_user(path, byte=0):
        with pytest.warns(ShoalUnsafeFileWarning, match=str(squatted)):
            grant = NodeSemaphore(2).acquire(2, timeout=BOUND_SECONDS)
        grant.release()


def test_the_per_user_token_file_is_private(tmp_path, monkeypatch):
    shared = shared_sticky_directory(tmp_path / "shm")
    path = shared / f"shoal-threads-{os.geteuid()}" / semaphore_module.TOKENS_FILE
    monkeypatch.setattr(semaphore_module, "per_user_path", lambda: str(path))
    monkeypatch.delenv("SHOAL_SEMAPHORE_PATH", raising=False)
    NodeSemaphore(2).acquire(1).release()
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert stat.S_IMODE(path.stat().st_mode) == 0o600 and path.stat().st_uid == os.geteuid()


def test_a_refused_token_file_still_makes_this_process_take_turns(tmp_path):
    link = tmp_path / "tokens"
    link.symlink_to(tmp_path / "elsewhere")
    semaphore = NodeSemaphore(2, str(link))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        held = semaphore.acquire(2)
    assert not (tmp_path / "elsewhere").exists()
    assert [warning.category for warning in caught] == [ShoalUnsafeFileWarning]
    with pytest.raises(TimeoutError, match="thread tokens"):
        semaphore.acquire(1, timeout=0.05)
    assert semaphore.tokens_in_use() == 2
    held.release()
    assert semaphore.tokens_in_use() == 0
    assert not (tmp_path / "elsewhere").exists()

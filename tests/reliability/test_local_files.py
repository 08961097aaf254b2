"""Files another user could write are never loaded: the kernel cache's directory, libraries,
records, compile costs and claims (the thread-token file: ``test_local_token_file.py``).

The other user is real where the tests run as root: files are given to uid 65534 (nobody) and
its locks are held by a process running as that user. A planted library is one whose
constructor writes a marker file, so "not loaded" means its code never ran.
"""

from __future__ import annotations

import os
import shutil
import stat

import pytest

from reliability.local_files_helpers import (
    TAG,
    build_marker_library,
    give_to_other_user,
    lock_held_by_other_user,
    marker_written,
    needs_root,
    plant,
    record,
)
from shoal.engine.node.compile import costs as compile_costs
from shoal.engine.node.compile import kernel_cache as compiler
from shoal.engine.node.compile import native
from shoal.engine.node.compile.claims import claim_path, try_claim
from shoal.engine.node.compile.worker import trusted_directory
from shoal.errors import ShoalUnsafeFileWarning

KEY = "0123456789abcdef01234567"  # a kernel key: 24 hex digits


@pytest.fixture(scope="session")
def planted_content(tmp_path_factory):
    return build_marker_library(tmp_path_factory.mktemp("planted-library"))


@pytest.fixture
def marker(tmp_path, monkeypatch):
    path = tmp_path / "constructor-ran"
    monkeypatch.setenv("SHOAL_TEST_PLANTED_MARKER", str(path))
    return path


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A fresh SHOAL_CACHE_DIR; returns its kernel directory (not made yet)."""
    monkeypatch.setenv("SHOAL_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache" / "kernels"


def test_a_library_planted_by_another_user_in_the_cache_is_not_loaded(cache, planted_content, marker):
    needs_root()
    cache.mkdir(parents=True, mode=0o700)
    library = native.library_path(cache, f"shoal_kernel_{KEY}")
    plant(library, planted_content, record(planted_content))
    give_to_other_user(library, library.with_suffix(".json"))
    loaded = native.load(library)
    assert not marker_written(marker)  # its constructor did not run
    assert loaded is None and not native.available(library)


def test_a_cache_directory_of_another_user_is_refused_with_one_warning(cache, planted_content, marker):
    needs_root()
    library = native.library_path(cache, f"shoal_kernel_{KEY}")
    plant(library, planted_content, record(planted_content))
    give_to_other_user(cache, library, library.with_suffix(".json"))
    with pytest.warns(ShoalUnsafeFileWarning, match="belongs to uid 65534") as caught:
        assert not compiler.machine_code_cached(KEY)
        assert not compiler.machine_code_cached(KEY)
    assert len(caught) == 1
    assert compiler.past_numpy_seconds(KEY) == 0.0
    assert not marker_written(marker)


@pytest.mark.parametrize(("where", "mode"), [("kernels", 0o770), ("kernels", 0o707), ("cache", 0o777)])
def test_a_cache_directory_others_may_write_in_is_refused_with_a_warning(cache, where, mode):
    (cache / "__pycache__").mkdir(parents=True)
    name = f"shoal_kernel_{KEY}"
    (cache / "__pycache__" / f"{name}.{name}-5.py311.nbi").write_bytes(b"planted machine code index")
    os.chmod(cache if where == "kernels" else cache.parent, mode)
    with pytest.warns(ShoalUnsafeFileWarning, match=f"mode {mode:04o}"):
        assert not compiler.machine_code_cached(KEY)


def test_the_cache_directory_is_made_private_and_files_are_written_private(cache):
    assert not compiler.machine_code_cached(KEY)  # looks at the cache: makes it
    compile_costs.save(compile_costs.CompileCosts(startup=1.5), cache)
    for directory in (cache.parent, cache, cache / "__pycache__"):
        assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert stat.S_IMODE((cache / compile_costs.COSTS_FILE).stat().st_mode) == 0o600
    assert compile_costs.load(cache).startup == 1.5


def test_a_library_whose_content_does_not_match_its_hash_is_not_loaded(cache, planted_content, marker):
    cache.mkdir(parents=True, mode=0o700)
    library = native.library_path(cache, f"shoal_kernel_{KEY}")
    tampered = planted_content.replace(TAG, b"EVILTAG1")  # the same size: only the hash tells
    plant(library, tampered, record(planted_content))
    loaded = native.load(library)
    assert not marker_written(marker)
    assert loaded is None
    plant(library, planted_content, record(planted_content))  # the library as recorded loads
    assert native.load(library) is not None
    assert marker.read_bytes() == TAG + b"\n"


def test_a_library_recorded_without_a_hash_is_never_loaded(cache, planted_content, marker):
    cache.mkdir(parents=True, mode=0o700)
    library = native.library_path(cache, f"shoal_kernel_{KEY}")
    old = record(planted_content, format=1)
    del old["sha256"], old["size"]
    plant(library, planted_content, old)
    loaded = native.load(library)
    assert not marker_written(marker)
    assert loaded is None and not native.available(library)
    plant(library, planted_content, {**record(planted_content), "sha256": None})
    assert native.load(library) is None and not native.available(library)
    assert not marker_written(marker)


def test_a_library_or_record_that_is_a_link_is_not_followed(cache, planted_content, marker, tmp_path):
    cache.mkdir(parents=True, mode=0o700)
    elsewhere = tmp_path / "elsewhere" / "planted.so"
    plant(elsewhere, planted_content, record(planted_content))
    library = native.library_path(cache, f"shoal_kernel_{KEY}")
    library.symlink_to(elsewhere)
    library.with_suffix(".json").symlink_to(elsewhere.with_suffix(".json"))
    loaded = native.load(library)
    assert not marker_written(marker)
    assert loaded is None and not native.available(library)
    library.with_suffix(".json").unlink()
    shutil.copy(elsewhere.with_suffix(".json"), library.with_suffix(".json"))  # the library still a link
    assert native.load(library) is None
    assert not marker_written(marker)


def test_a_library_others_may_write_is_not_loaded(cache, planted_content, marker):
    cache.mkdir(parents=True, mode=0o700)
    library = native.library_path(cache, f"shoal_kernel_{KEY}")
    plant(library, planted_content, record(planted_content))
    os.chmod(library, 0o622)
    loaded = native.load(library)
    assert not marker_written(marker)
    assert loaded is None
    os.chmod(library, 0o600)
    os.chmod(library.with_suffix(".json"), 0o666)
    assert native.load(library) is None
    assert not marker_written(marker)


def test_compile_costs_of_another_user_are_not_used(cache):
    needs_root()
    compile_costs.save(compile_costs.CompileCosts(startup=1e-7, kernel=1e-7, per_step=1e-7), cache)
    give_to_other_user(cache / compile_costs.COSTS_FILE)
    assert compile_costs.load(cache) == compile_costs.CompileCosts()


def test_a_claim_file_of_another_user_is_replaced_not_waited_on(cache):
    needs_root()
    cache.mkdir(parents=True, mode=0o700)
    path = claim_path(cache / f"shoal_kernel_{KEY}.py")
    path.write_text("")
    os.chmod(path, 0o666)
    give_to_other_user(path)
    with lock_held_by_other_user(path, whole_file=True):
        taken = try_claim(path)
        assert taken is not None  # the foreign file is gone and the claim is ours
        status = os.fstat(taken.descriptor)
        assert status.st_uid == os.geteuid() and stat.S_IMODE(status.st_mode) == 0o600
        taken.release()
    assert not path.exists()


def test_the_compile_worker_compiles_nothing_in_a_directory_of_another_user(cache):
    needs_root()
    cache.mkdir(parents=True, mode=0o700)
    assert trusted_directory(cache)
    give_to_other_user(cache)
    assert not trusted_directory(cache)
    os.chown(cache, os.geteuid(), os.getegid())
    os.chmod(cache, 0o777)
    assert not trusted_directory(cache)

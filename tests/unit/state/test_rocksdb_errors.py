"""Typed open errors on real RocksDB stores: locked (retry) vs corrupted (wipe and restore)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from streamlet.errors import StateStoreCorruptedError, StateStoreError, StateStoreLockedError
from streamlet.state.rocksdb_store import RocksDBStatus, RocksDBStore, rocksdb_status

REPO_ROOT = Path(__file__).resolve().parents[3]


def _cause_status(error: BaseException) -> RocksDBStatus:
    assert error.__cause__ is not None
    return rocksdb_status(error.__cause__)


def _filled(path: Path) -> Path:
    store = RocksDBStore("s", path)
    store.put_all([(b"k%05d" % i, b"v" * 100) for i in range(2_000)])
    store.flush()
    store.close()
    return path


def _truncate(path: Path, keep: float) -> None:
    with path.open("r+b") as f:
        f.truncate(int(path.stat().st_size * keep))


def _only(directory: Path, pattern: str) -> Path:
    (match,) = directory.glob(pattern)
    return match


def _truncate_sst(db: Path) -> None:
    _truncate(_only(db, "*.sst"), 0.5)


def _truncate_manifest(db: Path) -> None:
    _truncate(_only(db, "MANIFEST-*"), 0.1)


def _garble_sst(db: Path) -> None:
    sst = _only(db, "*.sst")
    data = bytearray(sst.read_bytes())
    for i in range(100, len(data) - 100, 7):
        data[i] ^= 0xFF
    sst.write_bytes(bytes(data))


def _delete_sst(db: Path) -> None:
    _only(db, "*.sst").unlink()


def _delete_current(db: Path) -> None:
    (db / "CURRENT").unlink()


@pytest.mark.parametrize(
    "damage", [_truncate_sst, _truncate_manifest, _garble_sst, _delete_sst, _delete_current], ids=lambda f: f.__name__
)
def test_damaged_store_is_corrupted(tmp_path: Path, damage: Callable[[Path], None]) -> None:
    db = _filled(tmp_path / "db")
    damage(db)
    with pytest.raises(StateStoreCorruptedError, match="restored from its changelog") as info:
        RocksDBStore("s", db)
    assert _cause_status(info.value) is RocksDBStatus.CORRUPTED


def test_checksum_mismatch_mentioning_block_is_not_a_lock(tmp_path: Path) -> None:
    db = _filled(tmp_path / "db")
    _garble_sst(db)
    with pytest.raises(StateStoreCorruptedError) as info:
        RocksDBStore("s", db)
    assert "block" in str(info.value.__cause__)  # why the status is read from the prefix only


def test_open_instance_in_this_process_is_locked(tmp_path: Path) -> None:
    first = RocksDBStore("s", tmp_path / "db")
    try:
        with pytest.raises(StateStoreLockedError) as info:
            RocksDBStore("s", tmp_path / "db")
        assert _cause_status(info.value) is RocksDBStatus.LOCKED_IN_PROCESS
    finally:
        first.close()
    RocksDBStore("s", tmp_path / "db").close()  # released on close: the lock was the only problem


def test_store_open_in_another_process_is_locked(tmp_path: Path) -> None:
    db = _filled(tmp_path / "db")
    script = (
        "import sys\n"
        "from streamlet.state.rocksdb_store import RocksDBStore\n"
        f"store = RocksDBStore('s', {str(db)!r})\n"
        "print('open', flush=True)\n"
        "sys.stdin.read()\n"
        "store.close()\n"
    )
    env = dict(os.environ, PYTHONPATH=str(REPO_ROOT))
    child = subprocess.Popen(
        [sys.executable, "-c", script], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "open"
        with pytest.raises(StateStoreLockedError) as info:
            RocksDBStore("s", db)
        assert _cause_status(info.value) is RocksDBStatus.LOCKED
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(timeout=30)
    store = RocksDBStore("s", db)
    assert store.get(b"k00001") == b"v" * 100
    store.close()


def test_other_failures_are_neither_locked_nor_corrupted(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("not a directory")
    with pytest.raises(StateStoreError) as info:
        RocksDBStore("s", tmp_path / "file" / "db")
    assert not isinstance(info.value, StateStoreLockedError | StateStoreCorruptedError)


@pytest.mark.parametrize(
    ("message", "status"),
    [
        (
            "IO error: lock hold by current process, acquire time 1 acquiring thread 2: /x/LOCK: No locks available",
            RocksDBStatus.LOCKED_IN_PROCESS,
        ),
        ("IO error: While lock file: /x/LOCK: Resource temporarily unavailable", RocksDBStatus.LOCKED),
        ("Corruption: block checksum mismatch: in /x/lock/000009.sst", RocksDBStatus.CORRUPTED),
        (
            "IO error: No such file or directory: While opening a file for sequentially reading: /x/MANIFEST-5",
            RocksDBStatus.CORRUPTED,
        ),
        ("IO error: No space left on device: While appending to file: /lock/000012.sst", RocksDBStatus.OTHER),
        ("Invalid argument: /x: does not exist (create_if_missing is false)", RocksDBStatus.OTHER),
    ],
)
def test_status_is_read_from_the_message_prefix(message: str, status: RocksDBStatus) -> None:
    assert rocksdb_status(Exception(message)) is status

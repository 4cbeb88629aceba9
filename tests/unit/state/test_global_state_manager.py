"""GlobalStateManager on real RocksDB: records applied as a global table's source applies them, their next
offsets kept in the store with the data (KIP-1035) and resumed from, a legacy `.checkpoint` migrated, and a
missing or unreadable offset starting over, once."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import NamedTuple

import pytest
from aiokafka.structs import TopicPartition
from rocksdict import Options, Rdict

from streamlet.state import timestamped
from streamlet.state.checkpoint import OffsetCheckpoint
from streamlet.state.global_state_manager import GlobalStateManager
from streamlet.state.rocksdb_store import RocksDBStore, read_store_offsets

TP0 = TopicPartition("customers", 0)
TP1 = TopicPartition("customers", 1)


class Record(NamedTuple):
    offset: int
    key: bytes | None
    value: bytes | None
    timestamp: int


def _contents(manager: GlobalStateManager) -> dict[bytes, tuple[bytes, int]]:
    store = manager.stores["customers"]
    return {k: (timestamped.value_of(v), timestamped.timestamp_of(v)) for k, v in store.all()}


def _manager(app_dir: Path, chunk_records: int = 2) -> GlobalStateManager:
    return GlobalStateManager(app_dir, {"customers": "customers"}, chunk_records=chunk_records)


def test_records_update_delete_and_skip_null_keys(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    records = [Record(0, b"a", b"x", 5), Record(1, b"b", b"y", 6), Record(2, None, b"z", 7), Record(3, b"a", None, 8)]
    manager.apply(TP0, records)
    manager.apply(TP1, [Record(7, b"c", b"w", 1)])
    assert _contents(manager) == {b"b": (b"y", 6), b"c": (b"w", 1)}
    assert manager.offsets() == {TP0: 4, TP1: 8}
    manager.advance(TP1, 10)  # past a transaction marker
    manager.advance(TP0, 2)  # never backwards
    assert manager.offsets() == {TP0: 4, TP1: 10}
    manager.close(clean=True)


def _stored(app_dir: Path) -> dict[TopicPartition, int]:
    """The offsets the global store keeps on disk (its `offsets` column family, opened read-only)."""
    return read_store_offsets(app_dir / "global" / "rocksdb" / "customers")


def test_a_clean_close_commits_the_offsets_into_the_store_and_a_reopen_resumes(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    manager.apply(TP0, [Record(0, b"a", b"x", 5)])
    manager.advance(TP0, 3)  # past a transaction's commit marker: only the checkpoint writes it
    manager.close(clean=True)
    assert _stored(tmp_path) == {TP0: 3}  # next offsets, as Kafka's global offsets
    assert not (tmp_path / "global" / ".checkpoint").exists()
    reopened = _manager(tmp_path)
    assert reopened.checkpointed_offset(TP0) == 3 and reopened.checkpointed_offset(TP1) is None
    assert _contents(reopened) == {b"a": (b"x", 5)}
    reopened.close(clean=False)


def test_each_batch_writes_its_offset_with_its_data_so_a_kill_keeps_them_together(tmp_path: Path) -> None:
    """A process killed without a checkpoint keeps what RocksDB flushed, data and offsets alike: a flushed
    batch resumes after its records (a `.checkpoint` written only at checkpoints had nothing, and the store
    was wiped), an unflushed one is gone with its offset (re-read, not skipped)."""
    repo_root = Path(__file__).resolve().parents[3]
    script = (
        "import os\n"
        "from aiokafka.structs import TopicPartition\n"
        "from streamlet.state.global_state_manager import GlobalStateManager\n"
        "from tests.support.changelog import Record\n"
        f"m = GlobalStateManager({str(tmp_path)!r}, {{'customers': 'customers'}}, chunk_records=2)\n"
        "tp = TopicPartition('customers', 0)\n"
        "m.apply(tp, [Record(0, b'a', b'x', 5), Record(1, b'b', b'y', 6), Record(2, b'c', b'z', 7)])\n"
        "m.stores['customers'].flush()\n"  # RocksDB flushed on its own (memtable full): no checkpoint
        "m.apply(tp, [Record(3, b'd', b'w', 8)])\n"  # only in the memtable
        "os._exit(0)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(repo_root))
    subprocess.run([sys.executable, "-c", script], check=True, env=env, timeout=60)
    assert _stored(tmp_path) == {TP0: 3}
    reopened = _manager(tmp_path)
    assert reopened.checkpointed_offset(TP0) == 3
    assert _contents(reopened) == {b"a": (b"x", 5), b"b": (b"y", 6), b"c": (b"z", 7)}
    reopened.close(clean=False)


def test_a_legacy_checkpoint_is_migrated_into_the_store_then_removed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """KIP-1035: a global directory of an older version keeps its store and where to resume reading."""
    caplog.set_level(logging.INFO, "streamlet.state.legacy_checkpoint")
    old = RocksDBStore("customers", tmp_path / "global" / "rocksdb" / "customers")
    old.put(b"a", timestamped.encode(5, b"x"))  # data without an offset entry, as before KIP-1035
    old.close()
    checkpoint = OffsetCheckpoint(tmp_path / "global" / ".checkpoint")
    checkpoint.write({TP0: 7, TP1: 2, TopicPartition("gone", 0): 4})
    manager = _manager(tmp_path)
    assert not checkpoint.path.exists()
    assert manager.offsets() == {TP0: 7, TP1: 2}
    assert _contents(manager) == {b"a": (b"x", 5)}  # kept: its offsets came from the file
    assert "migrated changelog offset 7" in caplog.text and "matches no store" in caplog.text
    manager.close(clean=False)  # nothing written at close: the migration committed and flushed them
    assert _stored(tmp_path) == {TP0: 7, TP1: 2}


def test_the_stores_own_offset_wins_over_a_stale_legacy_checkpoint(tmp_path: Path) -> None:
    manager = _manager(tmp_path)
    manager.apply(TP0, [Record(9, b"a", b"x", 5)])
    manager.close(clean=True)
    OffsetCheckpoint(tmp_path / "global" / ".checkpoint").write({TP0: 4})
    reopened = _manager(tmp_path)
    assert reopened.checkpointed_offset(TP0) == 10
    assert not (tmp_path / "global" / ".checkpoint").exists()
    reopened.close(clean=False)


def test_without_a_valid_offset_the_store_starts_empty(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    old = RocksDBStore("customers", tmp_path / "global" / "rocksdb" / "customers")
    old.put(b"a", timestamped.encode(5, b"x"))  # data, no offset: it may miss compacted-away tombstones
    old.close()
    reopened = _manager(tmp_path)
    assert _contents(reopened) == {} and reopened.offsets() == {}
    assert "no changelog offset; wiping it" in caplog.text
    reopened.apply(TP0, [Record(0, b"a", b"x", 5)])
    reopened.close(clean=True)

    checkpoint = tmp_path / "global" / ".checkpoint"
    checkpoint.write_text("0\n1\ncustomers zero 1\n")  # a corrupt legacy file: ignored, removed
    kept = _manager(tmp_path)
    assert not checkpoint.exists()
    assert _contents(kept) == {b"a": (b"x", 5)} and kept.checkpointed_offset(TP0) == 1  # the store's offset
    kept.close(clean=False)


def test_an_unreadable_store_offset_wipes_the_store_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    manager = _manager(tmp_path)
    manager.apply(TP0, [Record(0, b"a", b"x", 5)])
    manager.close(clean=True)
    db = Rdict(str(tmp_path / "global" / "rocksdb" / "customers"), Options(raw_mode=True))
    db.get_column_family("offsets").put(b"customers-0", b"\x01")  # not an 8-byte long
    db.close()
    corrupt = _manager(tmp_path)
    assert "changelog offset is unreadable" in caplog.text
    assert _contents(corrupt) == {} and corrupt.checkpointed_offset(TP0) is None
    corrupt.close(clean=False)
    caplog.clear()
    again = _manager(tmp_path)
    assert "unreadable" not in caplog.text and "wiping" not in caplog.text  # once: the wipe removed the entry
    again.close(clean=False)

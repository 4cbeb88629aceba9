"""ProcessorStateManager: registration, restore, flush/checkpoint ordering, wipe rules, close; the changelog
offsets live in the stores (KIP-1035) and an old `.checkpoint` file is migrated into them."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from aiokafka.structs import TopicPartition

from streamlet.errors import StateStoreError
from streamlet.state.checkpoint import OffsetCheckpoint
from streamlet.state.record_cache import RecordCache
from streamlet.state.rocksdb_store import RocksDBStore, read_task_store_offsets
from streamlet.state.state_manager import ProcessorStateManager
from streamlet.state.store import Entry
from streamlet.task_id import TaskId
from tests.support.changelog import Record, restore

TASK = TaskId(1, 3)
TP = TopicPartition("app-counts-changelog", 3)
TP2 = TopicPartition("app-mem-changelog", 3)


def new_psm(task_dir: Path, **kwargs) -> ProcessorStateManager:  # type: ignore[no-untyped-def]
    return ProcessorStateManager(TASK, task_dir, {"counts": TP, "mem": TP2}, **kwargs)


def stored(task_dir: Path) -> dict[TopicPartition, int]:
    """The changelog offsets the task's RocksDB stores keep on disk (opened read-only)."""
    return read_task_store_offsets(task_dir / "rocksdb")


def test_flush_then_checkpoint_then_reload(tmp_path: Path) -> None:
    psm = new_psm(tmp_path)
    sent: list[Entry] = []
    cache = RecordCache(1 << 20)
    store = psm.register_store("counts", cache=cache, changelog_sink=lambda k, v: sent.append((k, v)))
    store.put(b"a", b"1")
    store.put(b"a", b"2")
    store.put(b"b", b"1")
    psm.flush()
    assert sent == [(b"a", b"2"), (b"b", b"1")]
    # The producer acked the two changelog records at offsets 40 and 41.
    psm.update_changelog_offsets({TP: 41, TopicPartition("app-output", 0): 7})
    psm.checkpoint()
    assert stored(tmp_path) == {TP: 41}  # in the store's offsets column family
    assert not (tmp_path / ".checkpoint").exists()
    assert psm.checkpointed_offsets() == {TP: 41}
    assert psm.changelog_offsets() == {TP: 42, TP2: 0}
    psm.close(clean=True)
    assert psm.closed

    again = new_psm(tmp_path)
    assert again.register_store("counts").get(b"a") == b"2"  # kept: it has its offset
    assert again.checkpointed_offsets() == {TP: 41}
    assert again.changelog_offsets() == {TP: 42, TP2: 0}
    again.close(clean=True)


def test_restore_in_bounded_chunks(tmp_path: Path) -> None:
    psm = new_psm(tmp_path, restore_chunk_records=10)
    batches: list[int] = []
    inner = RocksDBStore("counts", psm.store_dir("counts"))
    original = inner.apply_changelog_records

    def spy(records, **kwargs):  # type: ignore[no-untyped-def]
        records = list(records)
        batches.append(len(records))
        original(records, **kwargs)

    inner.apply_changelog_records = spy  # type: ignore[method-assign]
    store = psm.register_store("counts", store=inner, cache=RecordCache(1000), changelog_sink=lambda k, v: None)
    records = [(100 + 2 * i, b"k%02d" % i, b"v%d" % i) for i in range(25)]  # offsets with gaps
    records.append((200, b"k00", None))  # a tombstone
    assert restore(psm, TP, records) == 26
    assert batches == [10, 10, 6]
    assert psm.current_offsets()[TP] == 200
    assert psm.changelog_offsets()[TP] == 201
    assert store.get(b"k00") is None and store.get(b"k24") == b"v24"
    psm.close(clean=False)
    assert stored(tmp_path) == {TP: 200}  # each chunk wrote its offset with it


def test_restore_errors(tmp_path: Path) -> None:
    psm = new_psm(tmp_path)
    with pytest.raises(StateStoreError, match="registered before restoring"):
        restore(psm, TP, [(0, b"a", b"1")])
    with pytest.raises(ValueError, match="not a changelog partition"):
        restore(psm, TopicPartition("other", 3), [])
    psm.close(clean=False)


def test_restore_invalidates_cached_values(tmp_path: Path) -> None:
    psm = new_psm(tmp_path)
    store = psm.register_store("counts", cache=RecordCache(1000), changelog_sink=lambda k, v: None)
    store.put(b"a", b"stale")
    psm.flush()
    restore(psm, TP, [(5, b"a", b"restored")])
    assert store.get(b"a") == b"restored"
    psm.close(clean=False)


def _store_with_data(task_dir: Path, name: str = "counts") -> None:
    s = RocksDBStore(name, task_dir / "rocksdb" / name)
    s.put(b"old", b"data")
    s.close()


def test_corrupt_checkpoint_wipes_logged_stores(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    _store_with_data(tmp_path)
    (tmp_path / ".checkpoint").write_text("0\n2\napp-counts-changelog 3 41\n")
    psm = new_psm(tmp_path)
    assert "corrupt checkpoint" in caplog.text
    assert not (tmp_path / ".checkpoint").exists()
    assert psm.checkpointed_offsets() == {}
    assert psm.changelog_offsets() == {TP: 0, TP2: 0}
    assert psm.register_store("counts").get(b"old") is None
    psm.close(clean=False)


def test_store_without_checkpoint_entry_is_wiped(tmp_path: Path) -> None:
    _store_with_data(tmp_path)
    psm = new_psm(tmp_path)
    assert psm.register_store("counts").get(b"old") is None
    psm.close(clean=False)


def test_unlogged_persistent_store_is_never_wiped(tmp_path: Path) -> None:
    _store_with_data(tmp_path, "local")
    psm = ProcessorStateManager(TASK, tmp_path, {})
    assert psm.register_store("local").get(b"old") == b"data"
    psm.close(clean=True)
    assert not (tmp_path / ".checkpoint").exists()  # nothing to checkpoint


def test_an_unknown_offset_is_no_entry_and_an_empty_store_is_kept(tmp_path: Path) -> None:
    psm = new_psm(tmp_path)
    psm.register_store("counts")
    psm.register_store("mem", persistent=False)
    psm.close(clean=True)
    assert stored(tmp_path) == {} and not (tmp_path / ".checkpoint").exists()
    again = new_psm(tmp_path)
    again.register_store("counts").put(b"new", b"1")  # not wiped: it was empty
    assert again.changelog_offsets() == {TP: 0, TP2: 0}
    again.close(clean=False)


def test_unclean_close_writes_no_checkpoint_and_drops_dirty_cache(tmp_path: Path) -> None:
    psm = new_psm(tmp_path)
    sent: list[Entry] = []
    store = psm.register_store("counts", cache=RecordCache(1000), changelog_sink=lambda k, v: sent.append((k, v)))
    store.put(b"a", b"1")
    psm.flush()
    psm.update_changelog_offsets({TP: 10})
    psm.checkpoint()
    store.put(b"a", b"2")
    store.put(b"b", b"2")
    psm.update_changelog_offsets({TP: 11})
    psm.close(clean=False)
    assert sent == [(b"a", b"1")]
    assert stored(tmp_path) == {TP: 10}  # the last good one
    with pytest.raises(StateStoreError, match="closed"):
        psm.flush()


def test_clean_close_flushes_caches_and_checkpoints(tmp_path: Path) -> None:
    psm = new_psm(tmp_path)
    sent: list[Entry] = []
    store = psm.register_store("counts", cache=RecordCache(1000), changelog_sink=lambda k, v: sent.append((k, v)))
    store.put(b"a", b"1")
    psm.update_changelog_offsets({TP: 3})
    psm.close(clean=True)
    assert sent == [(b"a", b"1")]
    assert stored(tmp_path) == {TP: 3}


def test_wipe(tmp_path: Path) -> None:
    psm = new_psm(tmp_path)
    cache = RecordCache(1000)
    store = psm.register_store("counts", cache=cache, changelog_sink=lambda k, v: None)
    mem = psm.register_store("mem", persistent=False, changelog_sink=lambda k, v: None)
    store.put(b"a", b"1")
    mem.put(b"m", b"1")
    psm.flush()
    store.put(b"dirty", b"1")
    psm.update_changelog_offsets({TP: 5, TP2: 6})
    psm.checkpoint()
    psm.wipe()
    assert stored(tmp_path) == {}
    assert psm.changelog_offsets() == {TP: 0, TP2: 0}
    assert store.get(b"a") is None and store.get(b"dirty") is None and mem.get(b"m") is None
    assert cache.size_bytes == 0
    store.put(b"new", b"1")  # still usable
    psm.close(clean=True)


def test_registration_errors(tmp_path: Path) -> None:
    psm = new_psm(tmp_path)
    psm.register_store("counts")
    with pytest.raises(ValueError, match="already registered"):
        psm.register_store("counts")
    with pytest.raises(ValueError, match="no changelog partition"):
        psm.register_store("other", changelog_sink=lambda k, v: None)
    with pytest.raises(ValueError, match="share changelog"):
        ProcessorStateManager(TASK, tmp_path / "x", {"a": TP, "b": TP})
    assert set(psm.stores()) == {"counts"}
    with pytest.raises(KeyError):
        psm.store("nope")
    psm.close(clean=False)


def test_in_memory_store_restores_from_scratch_even_with_a_checkpoint_entry(tmp_path: Path) -> None:
    OffsetCheckpoint(tmp_path / ".checkpoint").write({TP: 5, TP2: 9})
    psm = new_psm(tmp_path)
    psm.register_store("mem", persistent=False)
    assert psm.changelog_offsets()[TP2] == 0
    restore(psm, TP2, [(0, b"a", b"1")])
    assert psm.store("mem").get(b"a") == b"1"
    assert psm.changelog_offsets()[TP2] == 1
    psm.close(clean=False)


def test_restore_records_applies_consumer_records_and_advances_the_offset(tmp_path) -> None:
    from collections import namedtuple

    from aiokafka.structs import TopicPartition

    from streamlet.state.state_manager import ProcessorStateManager
    from streamlet.task_id import TaskId

    record = namedtuple("record", "offset key value timestamp", defaults=(0,))
    tp = TopicPartition("app-s-changelog", 0)
    psm = ProcessorStateManager(TaskId(0, 0), tmp_path / "0_0", {"s": tp}, restore_chunk_records=2)
    store = psm.register_store("s")
    applied = psm.restore_records(
        tp,
        [
            record(0, b"a", b"1"),
            record(1, b"b", b"2"),
            record(2, None, b"x"),
            record(3, b"a", None),
            record(4, b"c", b"3"),
        ],
    )
    assert applied == 5
    assert (store.get(b"a"), store.get(b"b"), store.get(b"c")) == (None, b"2", b"3")
    assert psm.changelog_offsets() == {tp: 5}
    psm.close(clean=True)


def test_a_timestamped_store_restores_each_value_behind_its_record_timestamp(tmp_path: Path) -> None:
    """Kafka's rawValueToTimestampedValue: the changelog holds the plain value, the record its timestamp."""
    psm = new_psm(tmp_path)
    store = psm.register_store("counts", timestamped=True, changelog_sink=lambda k, v: None)
    records = [Record(5, b"a", b"one", 1_000), Record(6, b"b", b"two", 2_000)]
    records.append(Record(7, b"a", None, 3_000))  # a tombstone stays a delete
    assert psm.restore_records(TP, records) == 3
    assert store.get(b"a") is None
    assert store.get(b"b") == (2_000).to_bytes(8, "big") + b"two"
    psm.close(clean=True)


def test_a_checkpoint_file_is_migrated_into_the_stores_then_removed(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """KIP-1035: a state directory of an older version keeps its stores and their restore positions."""
    caplog.set_level(logging.INFO, "streamlet.state.legacy_checkpoint")
    _store_with_data(tmp_path)  # written before KIP-1035: data, no offsets column family entry
    OffsetCheckpoint(tmp_path / ".checkpoint").write({TP: 41, TP2: 9})
    psm = new_psm(tmp_path)
    assert (tmp_path / ".checkpoint").exists()  # until every entry found its store
    assert psm.register_store("counts").get(b"old") == b"data"  # kept: its offset came from the file
    assert (tmp_path / ".checkpoint").exists()
    psm.register_store("mem", persistent=False)  # in memory: its entry is dropped, it restores from scratch
    assert not (tmp_path / ".checkpoint").exists()
    assert psm.changelog_offsets() == {TP: 42, TP2: 0}
    assert "migrated changelog offset 41" in caplog.text
    psm.close(clean=False)  # no checkpoint written: the migrated offset is in the store already
    assert stored(tmp_path) == {TP: 41}
    again = new_psm(tmp_path)
    assert again.register_store("counts").get(b"old") == b"data"
    assert again.changelog_offsets()[TP] == 42
    again.close(clean=False)


def test_the_stores_own_offset_wins_over_a_stale_checkpoint_file(tmp_path: Path) -> None:
    store = RocksDBStore("counts", tmp_path / "rocksdb" / "counts")
    store.apply_changelog_records([Record(50, b"k", b"v")], offsets={TP: 50})
    store.close()
    OffsetCheckpoint(tmp_path / ".checkpoint").write({TP: 41})
    psm = new_psm(tmp_path)
    psm.register_store("counts")
    assert psm.changelog_offsets()[TP] == 51
    assert not (tmp_path / ".checkpoint").exists()
    psm.close(clean=False)


def test_an_unreadable_store_offset_wipes_the_store_once(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    from rocksdict import Options, Rdict

    _store_with_data(tmp_path)
    db = Rdict(str(tmp_path / "rocksdb" / "counts"), Options(raw_mode=True))  # opens every column family
    db.get_column_family("offsets").put(b"app-counts-changelog-3", b"\x01")  # not an 8-byte long
    db.close()
    psm = new_psm(tmp_path)
    store = psm.register_store("counts")
    assert "changelog offset is unreadable" in caplog.text
    assert store.get(b"old") is None and psm.changelog_offsets()[TP] == 0
    psm.close(clean=False)
    caplog.clear()
    again = new_psm(tmp_path)
    again.register_store("counts")
    assert "unreadable" not in caplog.text and "wiping" not in caplog.text  # once: the wipe removed the bad entry
    again.close(clean=False)

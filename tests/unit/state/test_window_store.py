"""RocksDBWindowStore: WindowKeySchema keys, time segments and Kafka's expiry rules; restore from a changelog."""

from __future__ import annotations

import struct
from pathlib import Path

from aiokafka.structs import TopicPartition

from streamlet.state import window_key_schema as schema
from streamlet.state.state_manager import ProcessorStateManager
from streamlet.state.window_store import RocksDBWindowStore, default_segment_interval
from streamlet.task_id import TaskId
from streamlet.topology import StreamsBuilder
from streamlet.topology.windows import TimeWindows
from tests.support.changelog import Record


def test_store_keys_are_kafkas_window_key_schema() -> None:
    key = schema.to_store_key(b"k", 1_000)
    assert key == b"k" + struct.pack(">q", 1_000) + struct.pack(">i", 0)
    assert schema.window_start_of(key) == 1_000
    assert schema.key_of(key) == b"k"


def test_default_segment_interval_is_half_the_retention_but_at_least_a_minute() -> None:
    assert default_segment_interval(10) == 60_000
    assert default_segment_interval(600_000) == 300_000


def test_segments_expire_behind_stream_time(tmp_path: Path) -> None:
    store = RocksDBWindowStore("w", tmp_path / "w", retention_ms=20, segment_interval_ms=10)
    for start in (0, 15, 21, 40):
        store.put(schema.to_store_key(b"k", start), str(start).encode())
    # stream time 40: reads see windows starting at 40 - 20 + 1 = 21 or later
    assert store.get(schema.to_store_key(b"k", 15)) is None
    assert store.get(schema.to_store_key(b"k", 21)) == b"21"
    # segments before (40 - 20) // 10 = 2 are gone: a write into one is dropped
    store.put(schema.to_store_key(b"k", 5), b"late")
    assert store.expired_writes == 1
    assert [schema.window_start_of(k) for k, _ in store.all()] == [21, 40]
    store.close()


def test_restore_rebuilds_window_values_from_the_changelog(tmp_path: Path) -> None:
    tp = TopicPartition("app-w-changelog", 0)
    state = ProcessorStateManager(TaskId(0, 0), tmp_path, {"w": tp})
    store = state.register_store("w", timestamped=True, window_retention_ms=100)
    key = schema.to_store_key(b"k", 60)
    state.restore_records(tp, [Record(0, key, b"\x00" * 7 + b"\x02", 75)])
    assert store.get(key) == struct.pack(">q", 75) + b"\x00" * 7 + b"\x02"
    state.close(clean=False)


def test_window_changelogs_are_compacted_and_deleted_after_retention_plus_a_day() -> None:
    builder = StreamsBuilder()
    builder.stream("in").group_by_key().windowed_by(TimeWindows.of_size_and_grace(1_000, 500)).count("w")
    (changelog,) = builder.build().internal_topics()
    assert changelog.name == "w-changelog"
    assert changelog.config["cleanup.policy"] == "compact,delete"
    assert changelog.config["retention.ms"] == str(1_500 + 86_400_000)


def test_a_range_reads_every_segment_also_after_reopening(tmp_path: Path) -> None:
    store = RocksDBWindowStore("w", tmp_path / "w", retention_ms=10_000_000, segment_interval_ms=60_000)
    starts = [0, 59_999, 60_000, 3_600_000]
    for key in (b"a", b"b"):
        for start in starts:
            store.put(schema.to_store_key(key, start), key)
    store.close()
    reopened = RocksDBWindowStore("w", tmp_path / "w", retention_ms=10_000_000, segment_interval_ms=60_000)
    # one key's windows from 59,999 to 3,600,000: three segments, in store-key order
    found = reopened.range(schema.to_store_key(b"a", 59_999), schema.to_store_key(b"a", 3_600_000))
    assert [(schema.key_of(k), schema.window_start_of(k)) for k, _ in found] == [
        (b"a", 59_999),
        (b"a", 60_000),
        (b"a", 3_600_000),
    ]
    assert len(list(reopened.all())) == 8
    reopened.close()


def test_a_join_store_skips_a_null_put_but_restores_a_tombstone(tmp_path: Path) -> None:
    """Kafka's RocksDBWindowStore with retainDuplicates: a null put (a record with a null value, logged as a
    tombstone) neither writes nor moves stream time; restoring that tombstone does move it."""
    store = RocksDBWindowStore("j", tmp_path / "j", retention_ms=10, retain_duplicates=True)
    try:
        store.put(schema.to_store_key(b"k", 5, 1), b"a")
        store.put(schema.to_store_key(b"k", 500_000, 2), None)
        assert store.observed_stream_time == 5
        assert list(store.all()) == [(schema.to_store_key(b"k", 5, 1), b"a")]
        store.put_all([(schema.to_store_key(b"k", 500_000, 2), None)])
        assert store.observed_stream_time == 500_000
        assert list(store.all()) == []  # expired behind the restored stream time
    finally:
        store.close()

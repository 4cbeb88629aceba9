"""RocksDBSessionStore: SessionKeySchema keys, segments by session end, Kafka's expiry; `find_sessions`."""

from __future__ import annotations

import struct
from pathlib import Path

from aiokafka.structs import TopicPartition

from streamlet.state import session_key_schema as schema
from streamlet.state.session_store import RocksDBSessionStore, find_sessions
from streamlet.state.state_manager import ProcessorStateManager
from streamlet.task_id import TaskId
from streamlet.topology import StreamsBuilder
from streamlet.topology.session_windows import SessionWindows
from tests.support.changelog import Record


def test_store_keys_are_kafkas_session_key_schema() -> None:
    key = schema.to_store_key(b"k", 10, 25)
    assert key == b"k" + struct.pack(">q", 25) + struct.pack(">q", 10)  # key, end, start
    assert (schema.key_of(key), schema.start_of(key), schema.end_of(key)) == (b"k", 10, 25)


def _sessions(store: RocksDBSessionStore, key: bytes, earliest_end: int, latest_start: int) -> list[tuple[int, int]]:
    return [(schema.start_of(k), schema.end_of(k)) for k, _ in find_sessions(store, key, earliest_end, latest_start)]


def test_find_sessions_keeps_the_exact_key_and_the_overlapping_sessions(tmp_path: Path) -> None:
    store = RocksDBSessionStore("s", tmp_path / "s", retention_ms=1_000_000)
    for key, start, end in [(b"a", 0, 5), (b"a", 10, 20), (b"a", 30, 30), (b"ab", 12, 14), (b"", 11, 11)]:
        store.put(schema.to_store_key(key, start, end), b"v")
    # overlapping [8, 25]: ends at or after 8, starts at or before 25; "ab" shares the prefix and is skipped
    assert _sessions(store, b"a", 8, 25) == [(10, 20)]
    assert _sessions(store, b"a", 0, 30) == [(0, 5), (10, 20), (30, 30)]
    assert _sessions(store, b"ab", 0, 100) == [(12, 14)]
    assert _sessions(store, b"", 0, 100) == [(11, 11)]
    store.close()


def test_sessions_expire_by_their_end_time(tmp_path: Path) -> None:
    store = RocksDBSessionStore("s", tmp_path / "s", retention_ms=20, segment_interval_ms=10)
    store.put(schema.to_store_key(b"k", 0, 15), b"long")  # starts long ago but ends at 15
    store.put(schema.to_store_key(b"k", 16, 16), b"short")
    store.put(schema.to_store_key(b"k", 40, 40), b"now")
    # stream time is the largest end, 40: sessions ending before 40 - 20 + 1 = 21 are gone
    assert store.get(schema.to_store_key(b"k", 0, 15)) is None
    assert _sessions(store, b"k", 0, 100) == [(40, 40)]
    store.put(schema.to_store_key(b"k", 1, 9), b"late")  # its segment (0) was dropped
    assert store.expired_writes == 1
    store.close()


def test_a_reopened_store_finds_sessions_in_every_segment(tmp_path: Path) -> None:
    store = RocksDBSessionStore("s", tmp_path / "s", retention_ms=10_000_000, segment_interval_ms=60_000)
    ends = [5, 70_000, 130_000, 4_000_000]
    for end in ends:
        store.put(schema.to_store_key(b"k", end, end), b"v")
    store.close()
    reopened = RocksDBSessionStore("s", tmp_path / "s", retention_ms=10_000_000, segment_interval_ms=60_000)
    assert _sessions(reopened, b"k", 0, 5_000_000) == [(end, end) for end in ends]
    reopened.close()


def test_restore_writes_the_changelog_back_in_kafkas_format(tmp_path: Path) -> None:
    tp = TopicPartition("app-s-changelog", 0)
    state = ProcessorStateManager(TaskId(0, 0), tmp_path, {"s": tp})
    store = state.register_store("s", session_retention_ms=100)
    key = schema.to_store_key(b"k", 60, 70)
    state.restore_records(tp, [Record(0, key, b"\x00" * 7 + b"\x02", 75)])
    assert store.get(key) == b"\x00" * 7 + b"\x02"  # plain values: a session store is not timestamped
    assert _sessions(store, b"k", 65, 65) == [(60, 70)]
    state.close(clean=False)


def test_session_changelogs_are_compacted_and_deleted_after_retention_plus_a_day() -> None:
    builder = StreamsBuilder()
    windows = SessionWindows.of_inactivity_gap_and_grace(1_000, 500)
    builder.stream("in").group_by_key().windowed_by(windows).count("s")
    (changelog,) = builder.build().internal_topics()
    assert changelog.name == "s-changelog"
    assert changelog.config["cleanup.policy"] == "compact,delete"
    assert changelog.config["retention.ms"] == str(1_500 + 86_400_000)

"""Transactional RocksDB stores (KIP-892) and store-managed offsets (KIP-1035), on real RocksDB.

Writes since the last commit live in the store's uncommitted writes: reads see them (read-your-writes, range
scans included, tombstones and range deletions too), committed reads and a reopened store do not, and
`commit(offsets)` puts them into RocksDB together with the changelog offsets."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from aiokafka.structs import TopicPartition

from streamlet.state.rocksdb_store import RocksDBStore
from streamlet.state.uncommitted import ENTRY_OVERHEAD_BYTES
from streamlet.state.window_key_schema import to_store_key
from streamlet.state.window_store import RocksDBWindowStore
from tests.support.changelog import Record

TP = TopicPartition("app-s-changelog", 0)


@pytest.fixture
def store(tmp_path: Path):
    s = RocksDBStore("s", tmp_path / "s", transactional=True, iteration_chunk=3)
    yield s
    s.close()


def reopened(store: RocksDBStore) -> RocksDBStore:
    store.close()
    return RocksDBStore("s", store.path, transactional=True)


def test_reads_see_uncommitted_writes_and_a_reopened_store_does_not(store: RocksDBStore) -> None:
    store.put(b"a", b"1")
    store.put_all([(b"b", b"2"), (b"c", b"3")])
    assert store.get(b"a") == b"1" and list(store.all()) == [(b"a", b"1"), (b"b", b"2"), (b"c", b"3")]
    assert store.get_committed(b"a") is None and list(store.range_committed(None, None)) == []
    again = reopened(store)
    try:
        assert list(again.all()) == [] and again.committed_offsets() == {}
    finally:
        again.close()


def test_commit_writes_the_data_and_the_offsets_in_one_batch(store: RocksDBStore) -> None:
    store.put(b"a", b"1")
    store.commit({TP: 7})
    assert store.approximate_num_uncommitted_bytes() == 0
    store.put(b"a", b"2")  # uncommitted again
    again = reopened(store)
    try:
        assert again.get(b"a") == b"1" and again.committed_offsets() == {TP: 7}
        again.commit({TP: None})  # an unknown offset deletes the entry
        assert again.committed_offsets() == {}
    finally:
        again.close()


def test_rollback_drops_the_uncommitted_writes(store: RocksDBStore) -> None:
    store.put(b"a", b"1")
    store.commit({TP: 1})
    store.put(b"a", b"2")
    store.delete(b"a")
    store.put(b"b", b"2")
    store.rollback()
    assert list(store.all()) == [(b"a", b"1")] and store.approximate_num_uncommitted_bytes() == 0


def test_tombstones_hide_committed_values_in_gets_and_scans(store: RocksDBStore) -> None:
    store.put_all([(b"a", b"1"), (b"b", b"1"), (b"c", b"1")])
    store.commit({})
    assert store.delete(b"b") == b"1"
    store.put(b"c", None)
    assert store.get(b"b") is None and store.get_committed(b"b") == b"1"
    assert list(store.all()) == [(b"a", b"1")]
    assert store.delete(b"b") is None  # already deleted (uncommitted)
    store.commit({})
    assert list(store.range_committed(None, None)) == [(b"a", b"1")]


def test_range_deletions_apply_before_later_writes(store: RocksDBStore) -> None:
    store.put_all([(b"k1", b"c"), (b"k2", b"c"), (b"k5", b"c"), (b"z", b"c")])
    store.commit({})
    store.put(b"k3", b"u")  # written, then range-deleted: gone
    store.delete_range(b"k", b"k4")
    store.put(b"k2", b"new")  # written after the range deletion: kept
    expected = [(b"k2", b"new"), (b"k5", b"c"), (b"z", b"c")]
    assert list(store.all()) == expected
    assert store.get(b"k1") is None and store.get(b"k3") is None and store.get(b"k5") == b"c"
    assert list(store.range(b"k0", b"k9")) == expected[:2]
    store.commit({TP: 3})
    assert list(store.range_committed(None, None)) == expected


def test_read_your_writes_matches_a_plain_dict_on_random_operations(tmp_path: Path) -> None:
    """Random puts, deletes, range deletions and commits: every get and range scan (chunked, so merged across
    native chunk boundaries) answers what a plain dict model answers."""
    rng = random.Random(892)
    store = RocksDBStore("s", tmp_path / "r", transactional=True, iteration_chunk=4)
    model: dict[bytes, bytes] = {}
    keys = [b"k%02d" % i for i in range(40)]
    try:
        for step in range(600):
            op = rng.random()
            key = rng.choice(keys)
            if op < 0.5:
                value = b"v%d" % step
                store.put(key, value)
                model[key] = value
            elif op < 0.75:
                assert store.delete(key) == model.pop(key, None)
            elif op < 0.8:
                lo, hi = sorted(rng.sample(keys, 2))
                store.delete_range(lo, hi)
                for k in [k for k in model if lo <= k < hi]:
                    del model[k]
            elif op < 0.9:
                store.commit({TP: step})
            lo, hi = sorted(rng.sample(keys, 2))
            assert store.get(key) == model.get(key)
            assert list(store.range(lo, hi)) == sorted((k, v) for k, v in model.items() if lo <= k <= hi)
        assert list(store.all()) == sorted(model.items())
        store.commit({TP: 600})
        assert list(store.range_committed(None, None)) == sorted(model.items())
    finally:
        store.close()


def test_uncommitted_bytes_count_keys_values_and_overhead(store: RocksDBStore) -> None:
    store.put(b"cd", b"x")
    store.commit({})
    store.put(b"ab", b"123")
    assert store.approximate_num_uncommitted_bytes() == 5 + ENTRY_OVERHEAD_BYTES
    store.put(b"ab", b"1")  # replaces: counted once
    store.delete(b"cd")  # a tombstone costs its key
    assert store.approximate_num_uncommitted_bytes() == 3 + 2 + 2 * ENTRY_OVERHEAD_BYTES
    store.commit({})
    assert store.approximate_num_uncommitted_bytes() == 0


def test_an_at_least_once_store_writes_through_and_reports_no_uncommitted_bytes(tmp_path: Path) -> None:
    store = RocksDBStore("s", tmp_path / "alos")
    try:
        store.put(b"a", b"1")
        assert store.get_committed(b"a") == b"1" and store.approximate_num_uncommitted_bytes() == 0
        store.commit({TP: 4})
        assert store.committed_offsets() == {TP: 4}
    finally:
        store.close()


def test_restored_records_bypass_the_uncommitted_writes_and_carry_their_offset(store: RocksDBStore) -> None:
    store.apply_changelog_records([Record(10, b"a", b"1"), Record(11, b"b", None)], offsets={TP: 11})
    assert store.get_committed(b"a") == b"1" and store.approximate_num_uncommitted_bytes() == 0
    assert store.committed_offsets() == {TP: 11}


def test_a_transactional_window_store_buffers_writes_and_segment_drops(tmp_path: Path) -> None:
    store = RocksDBWindowStore("w", tmp_path / "w", retention_ms=100, segment_interval_ms=60_000, transactional=True)
    try:
        old, new = to_store_key(b"k", 0), to_store_key(b"k", 200_000)
        store.put(old, b"1")
        store.commit({TP: 0})
        store.put(new, b"2")  # stream time moves on: the old segment is dropped (uncommitted)
        assert store.get(new) == b"2" and list(store.all()) == [(new, b"2")]
        assert store.approximate_num_uncommitted_bytes() > 0
        store.rollback()
        store.close()
        store = RocksDBWindowStore(
            "w", tmp_path / "w", retention_ms=100, segment_interval_ms=60_000, transactional=True
        )
        assert list(store.all()) == [(old, b"1")] and store.committed_offsets() == {TP: 0}
    finally:
        store.close()

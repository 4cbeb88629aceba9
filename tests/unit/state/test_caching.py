"""Record cache + caching store + change-logging store over real RocksDB (Kafka Streams' layering)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from streamlet.state.caching_store import CachingKeyValueStore
from streamlet.state.logging_store import ChangeLoggingKeyValueStore
from streamlet.state.record_cache import RecordCache, entry_size
from streamlet.state.rocksdb_store import RocksDBStore
from streamlet.state.store import Entry


class SpyRocksDBStore(RocksDBStore):
    """Counts batches, to check that a cache flush reaches RocksDB as one write batch."""

    def __init__(self, *args, **kwargs) -> None:  # type: ignore[no-untyped-def]
        super().__init__(*args, **kwargs)
        self.batches: list[list[Entry]] = []
        self.single_puts = 0

    def put_all(self, entries: Iterable[Entry]) -> None:
        entries = list(entries)
        self.batches.append(entries)
        super().put_all(entries)

    def put(self, key: bytes, value: bytes | None) -> None:
        self.single_puts += 1
        super().put(key, value)


@dataclass
class Stack:
    rocks: SpyRocksDBStore
    logged: ChangeLoggingKeyValueStore
    cache: RecordCache
    store: CachingKeyValueStore
    changelog: list[Entry] = field(default_factory=list)
    emitted: list[tuple[bytes, bytes | None, bytes | None]] = field(default_factory=list)


def make_stack(tmp_path: Path, max_bytes: int, name: str = "counts", cache: RecordCache | None = None) -> Stack:
    rocks = SpyRocksDBStore(name, tmp_path / "rocksdb" / name)
    changelog: list[Entry] = []
    logged = ChangeLoggingKeyValueStore(rocks, lambda k, v: changelog.append((k, v)))
    cache = cache if cache is not None else RecordCache(max_bytes)
    store = CachingKeyValueStore(logged, cache, f"0_0-{name}")
    stack = Stack(rocks, logged, cache, store, changelog)
    store.set_flush_listener(lambda k, new, old: stack.emitted.append((k, new, old)))
    return stack


@pytest.fixture
def stack(tmp_path: Path):
    s = make_stack(tmp_path, 1_000_000)
    yield s
    s.store.close()


def test_writes_stay_in_cache_until_flush_then_one_record_per_key(stack: Stack) -> None:
    for value in (b"1", b"2", b"3"):
        stack.store.put(b"a", value)
    stack.store.put(b"b", b"1")
    stack.store.put(b"c", b"1")
    stack.store.put(b"b", b"2")  # b is now the most recently dirtied key
    assert stack.store.get(b"a") == b"3"
    assert stack.rocks.get(b"a") is None and stack.changelog == [] and stack.emitted == []

    stack.store.flush()
    assert stack.changelog == [(b"a", b"3"), (b"c", b"1"), (b"b", b"2")]
    assert stack.emitted == [(b"a", b"3", None), (b"c", b"1", None), (b"b", b"2", None)]
    assert stack.rocks.batches == [[(b"a", b"3"), (b"c", b"1"), (b"b", b"2")]]  # ONE write batch
    assert stack.rocks.single_puts == 0
    assert stack.rocks.get(b"a") == b"3"

    # Next commit interval: old values come from the store.
    stack.store.put(b"a", b"4")
    stack.store.put(b"a", b"5")
    stack.store.flush()
    assert stack.emitted[3:] == [(b"a", b"5", b"3")]
    assert stack.changelog[3:] == [(b"a", b"5")]

    # Nothing dirty: a flush writes and emits nothing.
    stack.store.flush()
    assert len(stack.rocks.batches) == 2 and len(stack.emitted) == 4


def test_deletes_are_cached_and_flushed_as_tombstones(stack: Stack) -> None:
    stack.store.put(b"x", b"1")
    stack.store.flush()
    assert stack.store.delete(b"x") == b"1"
    assert stack.store.get(b"x") is None
    assert stack.rocks.get(b"x") == b"1"  # not yet written down
    stack.store.flush()
    assert stack.rocks.get(b"x") is None
    assert stack.changelog[-1] == (b"x", None)
    assert stack.emitted[-1] == (b"x", None, b"1")
    assert stack.cache.entry_count("0_0-counts") == 0  # flushed deletes leave the cache


def test_delete_of_absent_key_is_neither_written_nor_emitted(stack: Stack) -> None:
    stack.store.put(b"tmp", b"1")
    stack.store.delete(b"tmp")  # created and deleted within one commit interval
    stack.store.delete(b"never")
    stack.store.flush()
    assert stack.changelog == [] and stack.emitted == [] and stack.rocks.batches == []


def test_bounded_bytes_eviction_flushes_through_logging_to_rocksdb_and_listener(tmp_path: Path) -> None:
    per_entry = entry_size(b"k00", b"v00")
    s = make_stack(tmp_path, max_bytes=per_entry * 3)
    for i in range(10):
        s.store.put(b"k%02d" % i, b"v%02d" % i)
        assert s.cache.size_bytes <= s.cache.max_bytes
    assert s.cache.num_evictions > 0
    evicted_so_far = {k for k, _ in s.changelog}
    assert evicted_so_far and all(s.rocks.get(k) is not None for k in evicted_so_far)
    s.store.flush()
    keys = [b"k%02d" % i for i in range(10)]
    assert sorted(k for k, _ in s.changelog) == keys  # each key exactly once
    assert sorted(k for k, _, _ in s.emitted) == keys
    assert all(s.rocks.get(k) == b"v" + k[1:] for k in keys)
    s.store.close()


def test_evicting_a_dirty_entry_flushes_all_dirty_entries_as_one_batch(tmp_path: Path) -> None:
    s = make_stack(tmp_path, max_bytes=entry_size(b"a", b"1") * 3)
    for key in (b"a", b"b", b"c", b"d"):
        s.store.put(key, b"1")
    # Putting d overflowed the cache: a (LRU) was evicted, which flushed every dirty entry at once.
    assert s.rocks.batches == [[(b"a", b"1"), (b"b", b"1"), (b"c", b"1"), (b"d", b"1")]]
    assert [k for k, _, _ in s.emitted] == [b"a", b"b", b"c", b"d"]
    assert s.cache.entry_count("0_0-counts") == 3 and s.cache.dirty_count("0_0-counts") == 0
    s.store.close()


def test_lru_eviction_of_clean_entries(tmp_path: Path) -> None:
    s = make_stack(tmp_path, max_bytes=entry_size(b"a", b"1") * 3)
    for key in (b"a", b"b", b"c"):
        s.store.put(key, b"1")
    s.store.flush()
    assert s.store.get(b"a") == b"1"  # a becomes most recently used
    s.store.put(b"d", b"1")  # evicts b, the least recently used (clean: nothing written)
    assert s.cache.get("0_0-counts", b"b") is None
    assert s.cache.get("0_0-counts", b"a") is not None
    assert len(s.rocks.batches) == 1
    assert s.store.get(b"b") == b"1"  # read through from RocksDB
    s.store.close()


def test_read_through_caches_clean_values(stack: Stack) -> None:
    stack.rocks.put(b"r", b"1")
    assert stack.store.get(b"r") == b"1"
    entry = stack.cache.get("0_0-counts", b"r")
    assert entry is not None and not entry.dirty
    stack.store.flush()
    assert stack.changelog == []  # clean entries are not written back


def test_size_zero_cache_is_pass_through(tmp_path: Path) -> None:
    s = make_stack(tmp_path, max_bytes=0)
    s.store.put(b"a", b"1")
    assert s.rocks.get(b"a") == b"1" and s.changelog == [(b"a", b"1")]
    s.store.put(b"a", b"2")
    s.store.delete(b"a")
    s.store.delete(b"never")
    # no caching layer at all, as Kafka strips it for a 0-byte cache: even a delete of an absent key is
    # logged and emitted (the semantics oracle shows Kafka Streams' driver doing so)
    assert s.emitted == [(b"a", b"1", None), (b"a", b"2", b"1"), (b"a", None, b"2"), (b"never", None, None)]
    assert s.changelog == [(b"a", b"1"), (b"a", b"2"), (b"a", None), (b"never", None)]
    assert s.cache.entry_count() == 0
    s.store.close()


def test_range_merges_cache_over_store(stack: Stack) -> None:
    stack.store.put_all([(b"a", b"1"), (b"b", b"2"), (b"c", b"3")])
    stack.store.flush()
    stack.store.put(b"b", b"20")
    stack.store.delete(b"c")
    stack.store.put(b"d", b"4")
    assert list(stack.store.all()) == [(b"a", b"1"), (b"b", b"20"), (b"d", b"4")]
    assert list(stack.store.range(b"b", b"c")) == [(b"b", b"20")]
    assert list(stack.store.range(b"c", b"b")) == []


def test_listener_may_write_reentrantly(tmp_path: Path) -> None:
    cache = RecordCache(entry_size(b"k0", b"v") * 4)
    upstream = make_stack(tmp_path, 0, name="up", cache=cache)
    downstream = make_stack(tmp_path, 0, name="down", cache=cache)

    def forward(key: bytes, new: bytes | None, old: bytes | None) -> None:
        upstream.emitted.append((key, new, old))
        if new is not None and not key.endswith(b"!"):
            downstream.store.put(key, new)  # a downstream processor writing its own store
            upstream.store.put(key + b"!", new)  # and even the same store

    upstream.store.set_flush_listener(forward)
    for i in range(6):
        upstream.store.put(b"k%d" % i, b"v")
    upstream.store.flush()
    downstream.store.flush()
    upstream.store.flush()
    named = [upstream.store.namespace, downstream.store.namespace]
    assert cache.size_bytes == sum(cache._cache(n).size_bytes for n in named)  # noqa: SLF001
    for i in range(6):
        assert downstream.rocks.get(b"k%d" % i) == b"v"
        assert upstream.rocks.get(b"k%d!" % i) == b"v"
    upstream.store.close()
    downstream.store.close()


def test_close_flushes_and_drop_cache_discards(tmp_path: Path) -> None:
    s = make_stack(tmp_path, 10_000)
    s.store.put(b"kept", b"1")
    s.store.close()
    assert s.changelog == [(b"kept", b"1")]
    assert s.cache.namespaces() == []

    s2 = make_stack(tmp_path / "2", 10_000)
    s2.store.put(b"lost", b"1")
    s2.store.drop_cache()
    s2.store.close()
    assert s2.changelog == [] and s2.cache.size_bytes == 0


def test_logging_store_alone(tmp_path: Path) -> None:
    rocks = SpyRocksDBStore("s", tmp_path / "db")
    sent: list[Entry] = []
    logged = ChangeLoggingKeyValueStore(rocks, lambda k, v: sent.append((k, v)))
    logged.put(b"a", b"1")
    assert logged.delete(b"a") == b"1"
    logged.put_all([(b"b", b"2"), (b"c", None)])
    assert sent == [(b"a", b"1"), (b"a", None), (b"b", b"2"), (b"c", None)]
    assert rocks.batches == [[(b"b", b"2"), (b"c", None)]]
    assert logged.get(b"b") == b"2" and logged.persistent and logged.name == "s"
    logged.close()


def test_cache_namespaces_are_unique(tmp_path: Path) -> None:
    cache = RecordCache(100)
    cache.register("0_0-s", lambda entries: None)
    with pytest.raises(ValueError, match="already registered"):
        cache.register("0_0-s", lambda entries: None)
    with pytest.raises(ValueError):
        RecordCache(-1)


def _failing_on(stack: Stack, *bad: bytes) -> None:
    """A listener that raises on the entries of `bad` keys (after recording that it was called)."""

    def forward(key: bytes, new: bytes | None, old: bytes | None) -> None:
        stack.emitted.append((key, new, old))
        if key in bad:
            raise ValueError(key.decode())

    stack.store.set_flush_listener(forward)


def test_a_flush_goes_on_after_the_entries_whose_forward_the_error_handler_skips(stack: Stack) -> None:
    errors: list[str] = []
    _failing_on(stack, b"a", b"c")
    stack.store.set_forward_error_handler(lambda exc: errors.append(str(exc)))
    for key in (b"a", b"b", b"c", b"d"):
        stack.store.put(key, b"1")
    stack.store.flush()
    assert [key for key, _, _ in stack.emitted] == [b"a", b"b", b"c", b"d"]  # each forwarded once
    assert errors == ["a", "c"]
    assert stack.changelog == [(b"a", b"1"), (b"b", b"1"), (b"c", b"1"), (b"d", b"1")]  # all written
    assert stack.rocks.get(b"c") == b"1"


def test_a_flush_stops_at_an_entry_whose_forward_fails_without_a_handler_or_when_it_raises(stack: Stack) -> None:
    _failing_on(stack, b"b")
    for key in (b"a", b"b", b"c"):
        stack.store.put(key, b"1")
    with pytest.raises(ValueError, match="b"):
        stack.store.flush()
    assert [key for key, _, _ in stack.emitted] == [b"a", b"b"]

    def stop(exc: Exception) -> None:
        raise RuntimeError("stopped") from exc

    stack.emitted.clear()
    stack.store.set_forward_error_handler(stop)
    for key in (b"a", b"b", b"c"):
        stack.store.put(key, b"2")
    with pytest.raises(RuntimeError, match="stopped"):
        stack.store.flush()
    assert [key for key, _, _ in stack.emitted] == [b"a", b"b"]

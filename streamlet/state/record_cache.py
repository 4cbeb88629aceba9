"""RecordCache: Kafka Streams' `ThreadCache`/`NamedCache`, the write-back cache in front of state stores.

Why it exists: an aggregation updates the same key many times between commits. Holding the latest value in
memory and writing it downstream only when the cache is flushed (at commit) or when the entry is evicted
turns N updates of a key into one store write, one changelog record and one downstream record per commit.

Shape (as in Kafka Streams):

* One `RecordCache` per stream thread, bounded in bytes (`statestore.cache.max.bytes` divided by the
  number of threads); every caching store of the thread's tasks gets a namespace in it.
* Within a namespace, entries are kept in LRU order. When a put makes the whole cache exceed its bound,
  entries of *that* namespace are evicted, least recently used first.
* Evicting a dirty entry flushes **all** dirty entries of its namespace, in the order they were last
  dirtied, through the namespace's flush callback (which writes them to the store below and emits them).
  After a flush the entries stay cached as clean entries, except deletes, which are dropped.
* The dirty set is cleared before the callback runs, so the callback may re-enter the cache (downstream
  processors writing to stores of the same thread).

Sizes are estimates: key and value lengths plus a fixed per-entry overhead, like Kafka's accounting; the
real Python memory use is higher (object headers), so treat the bound as relative.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from mypy_extensions import mypyc_attr

from streamlet.state.store import Entry, SortedKeyIndex

#: Fixed per-entry bytes added to key and value lengths (roughly Kafka's LRUCacheEntry bookkeeping:
#: timestamp, offset, partition, dirty flag, list pointers).
ENTRY_OVERHEAD_BYTES = 32

#: Receives the dirty entries of one namespace, `(key, new_value)` with None = delete, oldest-dirtied first.
FlushCallback = Callable[[list[Entry]], None]


def entry_size(key: bytes, value: bytes | None) -> int:
    """The bytes an entry counts against the cache bound."""
    return len(key) + (0 if value is None else len(value)) + ENTRY_OVERHEAD_BYTES


@dataclass(slots=True)
class CacheEntry:
    value: bytes | None  # None: a cached delete (a dirty tombstone)
    dirty: bool


class NamedCache:
    """One store's namespace of the thread cache. Use it through RecordCache (which enforces the bound).

    Size changes are applied to the parent's total at once (not returned to it), so that puts made
    re-entrantly by a flush callback are counted exactly once.
    """

    def __init__(self, name: str, on_flush: FlushCallback, parent: RecordCache) -> None:
        self.name = name
        self._on_flush = on_flush
        self._parent = parent
        self._entries: OrderedDict[bytes, CacheEntry] = OrderedDict()  # LRU first, MRU last
        self._dirty: dict[bytes, None] = {}  # insertion-ordered set: order of last dirtying
        self._index = SortedKeyIndex()
        self.size_bytes = 0

    def __len__(self) -> int:
        return len(self._entries)

    @property
    def dirty_count(self) -> int:
        return len(self._dirty)

    def _adjust(self, delta: int) -> None:
        self.size_bytes += delta
        self._parent.size_bytes += delta

    def get(self, key: bytes) -> CacheEntry | None:
        entry = self._entries.get(key)
        if entry is not None:
            self._entries.move_to_end(key)
        return entry

    def put(self, key: bytes, value: bytes | None, dirty: bool) -> None:
        old = self._entries.get(key)
        delta = entry_size(key, value)
        if old is None:
            self._index.added(key)
            self._entries[key] = CacheEntry(value, dirty)
        else:
            delta -= entry_size(key, old.value)
            old.value = value
            # A clean put over a dirty entry must not lose the pending write.
            old.dirty = old.dirty or dirty
            self._entries.move_to_end(key)
        if dirty:
            self._dirty.pop(key, None)
            self._dirty[key] = None
        self._adjust(delta)

    def replace(self, key: bytes, value: bytes) -> bool:
        """`put(key, value, dirty=True)` over a cached value of the same length, in one lookup and without size
        bookkeeping (an aggregation's read-modify-write: a count stays 8 bytes); False if that does not apply."""
        entry = self._entries.get(key)
        if entry is None or entry.value is None or len(entry.value) != len(value):
            return False
        entry.value = value
        entry.dirty = True
        self._entries.move_to_end(key)
        dirty = self._dirty
        dirty.pop(key, None)
        dirty[key] = None
        return True

    def remove(self, key: bytes) -> None:
        """Drop an entry without flushing it."""
        entry = self._entries.pop(key, None)
        if entry is None:
            return
        self._dirty.pop(key, None)
        self._index.removed(key)
        self._adjust(-entry_size(key, entry.value))

    def evict(self) -> None:
        """Evict the LRU entry; if it was dirty, flush it together with all other dirty entries."""
        key, entry = next(iter(self._entries.items()))
        self._entries.pop(key)
        self._index.removed(key)
        self._adjust(-entry_size(key, entry.value))
        if entry.dirty:
            self._dirty.pop(key, None)
            self.flush(evicted=(key, entry.value))

    def flush(self, evicted: Entry | None = None) -> None:
        """Hand every dirty entry to the flush callback; flushed deletes are dropped from the cache."""
        if evicted is None and not self._dirty:
            return
        batch: list[Entry] = [] if evicted is None else [evicted]
        tombstones: list[bytes] = []
        for key in self._dirty:
            entry = self._entries[key]
            entry.dirty = False
            batch.append((key, entry.value))
            if entry.value is None:
                tombstones.append(key)
        self._dirty = {}  # before the callback: it may re-enter and dirty entries again
        self._on_flush(batch)
        for key in tombstones:
            cached = self._entries.get(key)
            if cached is not None and cached.value is None and not cached.dirty:
                self.remove(key)

    def range(self, from_key: bytes | None, to_key: bytes | None) -> list[tuple[bytes, CacheEntry]]:
        """Cached entries (including delete markers) in `[from_key, to_key]`, ascending, as a snapshot."""
        entries = self._entries
        keys = self._index.keys_in_range(entries.__contains__, from_key, to_key)
        return [(key, entries[key]) for key in keys]

    def clear(self) -> None:
        """Drop everything without flushing (store wiped or closed uncleanly)."""
        self._entries.clear()
        self._dirty = {}
        self._index.clear()
        self._adjust(-self.size_bytes)


@mypyc_attr(allow_interpreted_subclasses=True)  # tests compare it with a variant
class RecordCache:
    """The per-stream-thread cache shared by all caching stores of the thread (Kafka's ThreadCache)."""

    def __init__(self, max_bytes: int) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        self.max_bytes = max_bytes
        self.size_bytes = 0
        self._caches: dict[str, NamedCache] = {}
        self.num_evictions = 0
        self.num_flushes = 0

    def register(self, namespace: str, on_flush: FlushCallback) -> NamedCache:
        """Create the namespace of one store (e.g. `"1_0-counts"`); names must be unique in the thread."""
        if namespace in self._caches:
            raise ValueError(f"cache namespace {namespace!r} is already registered")
        cache = NamedCache(namespace, on_flush, self)
        self._caches[namespace] = cache
        return cache

    def unregister(self, namespace: str) -> None:
        """Drop a namespace and its entries without flushing (flush first if the data matters)."""
        cache = self._caches.pop(namespace, None)
        if cache is not None:
            cache.clear()

    def namespaces(self) -> list[str]:
        return list(self._caches)

    def _cache(self, namespace: str) -> NamedCache:
        try:
            return self._caches[namespace]
        except KeyError:
            error = KeyError(f"cache namespace {namespace!r} is not registered")
            error.__cause__ = None  # mypyc ignores `raise ... from None`
            raise error  # noqa: B904 (its cause is set)

    def get(self, namespace: str, key: bytes) -> CacheEntry | None:
        return self._cache(namespace).get(key)

    def put(self, namespace: str, key: bytes, value: bytes | None, *, dirty: bool) -> None:
        """Cache `value` for `key` (dirty = a write not yet in the store), then evict while over the bound."""
        cache = self._cache(namespace)
        cache.put(key, value, dirty)
        self._evict_over_bound(cache)

    def replace_dirty(self, cache: NamedCache, key: bytes, value: bytes | None) -> bool:
        """The fused write of a read-modify-write (see `NamedCache.replace`); False: use `put` instead."""
        if value is None or not cache.replace(key, value):
            return False
        self._evict_over_bound(cache)  # the size did not change, but the cache may already be over its bound
        return True

    def _evict_over_bound(self, cache: NamedCache) -> None:
        # Only the namespace just written is evicted (Kafka's rule): if it runs empty while the cache is
        # still over the bound, other namespaces shrink on their own next write or flush.
        while self.size_bytes > self.max_bytes and len(cache):
            cache.evict()
            self.num_evictions += 1

    def remove(self, namespace: str, key: bytes) -> None:
        self._cache(namespace).remove(key)

    def flush(self, namespace: str) -> None:
        """Write out the namespace's dirty entries (commit time)."""
        self._cache(namespace).flush()
        self.num_flushes += 1

    def clear(self, namespace: str) -> None:
        """Drop the namespace's entries without flushing."""
        self._cache(namespace).clear()

    def range(self, namespace: str, from_key: bytes | None, to_key: bytes | None) -> list[tuple[bytes, CacheEntry]]:
        return self._cache(namespace).range(from_key, to_key)

    def dirty_count(self, namespace: str) -> int:
        return self._cache(namespace).dirty_count

    def entry_count(self, namespace: str | None = None) -> int:
        if namespace is None:
            return sum(len(c) for c in self._caches.values())
        return len(self._cache(namespace))

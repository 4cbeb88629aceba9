"""CachingKeyValueStore: the write-back cache layer on top of a (change-logging) store.

Stack for an active task's store (Kafka Streams' order)::

    CachingKeyValueStore  -> RecordCache namespace (dedups writes per key between flushes)
      ChangeLoggingKeyValueStore  -> changelog sink (one record per flushed key)
        RocksDBStore / InMemoryKeyValueStore

Writes land in the cache. When the cache is flushed (commit) or evicts a dirty entry, the namespace's dirty
entries go down as ONE `put_all` (one RocksDB write batch, one changelog record per key) and then, per
key, to the flush listener `listener(key, new_value, old_value)`: that is how count/aggregate emit one
downstream update per key per commit instead of one per input record. `old_value` is what the store below
held before the flush (read before writing), for processors that forward old values.

With a 0-byte cache the layer is a pass-through, as Kafka Streams drops caching layers when
`statestore.cache.max.bytes` is 0: every write goes straight down (deletes of absent keys too) and the
listener fires on every write.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable, Iterator

from streamlet.state.record_cache import CacheEntry, RecordCache
from streamlet.state.store import Entry, KeyValue, KeyValueStore, check_key, check_value, empty_range

#: `listener(key, new_value, old_value)`; None means "absent" (a delete, or no previous value).
FlushListener = Callable[[bytes, bytes | None, bytes | None], None]

#: `on_error(exc)`: the listener raised on one flushed entry; raise to stop the flush, return to go on with the next
ForwardErrorHandler = Callable[[Exception], None]


class CachingKeyValueStore:
    """Wraps `inner` (normally a ChangeLoggingKeyValueStore) with a namespace of the thread's RecordCache."""

    def __init__(self, inner: KeyValueStore, cache: RecordCache, namespace: str) -> None:
        self.inner = inner
        self.cache = cache
        self.namespace = namespace
        self._listener: FlushListener | None = None
        self._on_forward_error: ForwardErrorHandler | None = None
        self._passthrough = cache.max_bytes == 0
        self._named = cache.register(namespace, self._on_cache_flush)
        self._open = True

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def persistent(self) -> bool:
        return self.inner.persistent

    @property
    def passthrough(self) -> bool:
        """No cache (0 bytes): every write goes down and reaches the listener at once, within `put`."""
        return self._passthrough

    def set_flush_listener(self, listener: FlushListener | None) -> None:
        """Called with each flushed (or, with a 0-byte cache, each written) key: forward it downstream."""
        self._listener = listener

    def set_forward_error_handler(self, on_error: ForwardErrorHandler | None) -> None:
        """Called when the listener raises on a flushed entry (the task's processing exception handler).

        A flush runs outside the processing of any input record (at commit, or when an entry is evicted), so
        the error cannot reach the handler the way a record's does; as in Kafka Streams, where every node's
        error goes to the handler, the entry stays written, and the flush goes on if the handler returns."""
        self._on_forward_error = on_error

    # ------------------------------------------------------------------ reads

    def get(self, key: bytes) -> bytes | None:
        check_key(key)
        if self._passthrough:
            return self.inner.get(key)
        entry = self._named.get(key)
        if entry is not None:
            return entry.value
        value = self.inner.get(key)
        if value is not None:
            # Read-through: cache the clean value so the next read (typically the following put of an
            # aggregation) does not hit RocksDB.
            self.cache.put(self.namespace, key, value, dirty=False)
        return value

    def range(self, from_key: bytes | None, to_key: bytes | None) -> Iterator[KeyValue]:
        """Merge of the cache and the store below; the cache wins on equal keys, cached deletes hide keys."""
        if self._passthrough:
            return self.inner.range(from_key, to_key)
        if empty_range(from_key, to_key):
            return iter(())
        cached = self.cache.range(self.namespace, from_key, to_key)
        return _merge(cached, self.inner.range(from_key, to_key))

    def all(self) -> Iterator[KeyValue]:
        return self.range(None, None)

    def approximate_num_entries(self) -> int:
        return self.inner.approximate_num_entries()

    # ------------------------------------------------------------------ writes

    def put(self, key: bytes, value: bytes | None) -> None:
        check_key(key)
        check_value(value)
        if self._passthrough:
            self._write_through([(key, value)])
        elif not self.cache.replace_dirty(self._named, key, value):
            self.cache.put(self.namespace, key, value, dirty=True)

    def put_all(self, entries: Iterable[Entry]) -> None:
        for key, value in entries:
            self.put(key, value)

    def delete(self, key: bytes) -> bytes | None:
        old = self.get(key)
        self.put(key, None)
        return old

    # ------------------------------------------------------------------ flushing

    def _on_cache_flush(self, entries: list[Entry]) -> None:
        self._write_through(entries)

    def _write_through(self, entries: list[Entry]) -> None:
        inner = self.inner
        listener = self._listener
        if listener is None:
            inner.put_all(entries)
            return
        olds = [inner.get(key) for key, _ in entries]
        if self._passthrough:
            # No cache means no caching layer in Kafka (a 0-byte cache strips it): every write, a delete of a
            # key the store never had included, goes down, is logged and is emitted.
            changed = list(zip(entries, olds, strict=True))
        else:
            # A flushed delete of a key the store never had is neither written nor emitted (Kafka's optimisation).
            changed = [
                (entry, old)
                for entry, old in zip(entries, olds, strict=True)
                if entry[1] is not None or old is not None
            ]
        if not changed:
            return
        inner.put_all([entry for entry, _ in changed])  # written (and logged) before forwarded, as in Kafka
        forwarded = 0  # an index, not the failed item's identity: mypyc unboxes the tuples
        try:  # free unless a forward fails
            for (key, value), old in changed:
                listener(key, value, old)
                forwarded += 1
        except Exception as exc:
            on_error = self._on_forward_error
            if on_error is None:
                raise
            on_error(exc)  # raises to stop the flush
            _forward_rest(listener, changed, forwarded + 1, on_error)

    def flush_cache(self) -> None:
        """Write the dirty entries down and emit them, without flushing the store below."""
        if not self._passthrough:
            self.cache.flush(self.namespace)

    def flush(self) -> None:
        """Flush the cache, then the store below (RocksDB memtables to disk)."""
        self.flush_cache()
        self.inner.flush()

    def drop_cache(self) -> None:
        """Discard cached entries, dirty ones included, without writing them (unclean close, wipe)."""
        self.cache.clear(self.namespace)

    def close(self) -> None:
        """Flush the cache and close the store below (a clean close; use drop_cache first otherwise)."""
        if not self._open:
            return
        try:
            self.flush_cache()
        finally:
            self._open = False
            self.cache.unregister(self.namespace)
            self.inner.close()


def _forward_rest(
    listener: FlushListener, changed: list[tuple[Entry, bytes | None]], start: int, on_error: ForwardErrorHandler
) -> None:
    """The error path of a flush: forward the entries from `start` (after the one that failed), each error to
    `on_error`."""
    pending = itertools.islice(changed, start, None)
    while True:
        try:
            for (key, value), old in pending:
                listener(key, value, old)
            return
        except Exception as exc:
            on_error(exc)


def _merge(cached: list[tuple[bytes, CacheEntry]], stored: Iterator[KeyValue]) -> Iterator[KeyValue]:
    """Merge the cache snapshot (key, CacheEntry) with the store's ascending iterator."""
    tagged_cache = ((key, 0, entry.value) for key, entry in cached)
    tagged_store = ((key, 1, value) for key, value in stored)
    last: bytes | None = None
    # On equal keys the cache (tag 0) sorts first and wins; the store's duplicate is skipped.
    for key, _tag, value in heapq.merge(tagged_cache, tagged_store):
        if key == last:
            continue
        last = key
        if value is not None:
            yield key, value

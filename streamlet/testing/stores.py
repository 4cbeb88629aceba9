"""Read-only, deserializing views of a test driver's stores (Kafka's `getKeyValueStore` facades).

A timestamped store (what DSL aggregations use) shows plain values through `KeyValueStoreView`, and
`(value, timestamp)` pairs through `TimestampedKeyValueStoreView`, as Kafka's facades do.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from streamlet.state import session_key_schema, timestamped, window_key_schema
from streamlet.state.session_store import find_sessions
from streamlet.state.store import KeyValueStore
from streamlet.topology.nodes import StoreSpec
from streamlet.topology.session_windows import SessionWindow
from streamlet.topology.sliding_windows import SlidingWindows
from streamlet.topology.windows import TimeWindow, TimeWindows, Windowed


class KeyValueStoreView:
    """`get`, `all` and `approximate_num_entries` on objects, reading through the store's cache."""

    def __init__(self, store: KeyValueStore, spec: StoreSpec, serde_topic: str) -> None:
        self._store = store
        self._spec = spec
        self._topic = serde_topic

    @property
    def name(self) -> str:
        return self._spec.name

    def _value(self, raw: bytes) -> Any:
        if self._spec.timestamped:
            raw = timestamped.value_of(raw)
        return self._spec.value_serde.deserialize(self._topic, raw)

    def get(self, key: Any) -> Any:
        raw = self._store.get(self._spec.key_serde.serialize(self._topic, key) or b"")
        return None if raw is None else self._value(raw)

    def all(self) -> Iterator[tuple[Any, Any]]:
        """Every entry, in the store's key order (unsigned bytes, as RocksDB's)."""
        for key, raw in self._store.all():
            yield self._spec.key_serde.deserialize(self._topic, key), self._value(raw)

    def approximate_num_entries(self) -> int:
        return self._store.approximate_num_entries()


class TimestampedKeyValueStoreView(KeyValueStoreView):
    """Values as `(value, timestamp)`, the timestamp of the aggregate (Kafka's `ValueAndTimestamp`)."""

    def _value(self, raw: bytes) -> Any:
        value = self._spec.value_serde.deserialize(self._topic, timestamped.value_of(raw))
        return value, timestamped.timestamp_of(raw)


class WindowStoreView:
    """A window store by window: `fetch(key, window_start)` and `all()` as `(Windowed, value)` pairs."""

    def __init__(self, store: KeyValueStore, spec: StoreSpec, serde_topic: str) -> None:
        assert isinstance(spec.windows, TimeWindows | SlidingWindows)
        self._store = store
        self._spec = spec
        self._topic = serde_topic
        self._size = spec.windows.size_ms

    @property
    def name(self) -> str:
        return self._spec.name

    def fetch(self, key: Any, window_start: int) -> Any:
        """The aggregate of `key` in the window starting at `window_start`, or None."""
        key_bytes = self._spec.key_serde.serialize(self._topic, key) or b""
        raw = self._store.get(window_key_schema.to_store_key(key_bytes, window_start))
        return None if raw is None else self._spec.value_serde.deserialize(self._topic, timestamped.value_of(raw))

    def all(self) -> Iterator[tuple[Windowed, Any]]:
        """Every live window's aggregate, in store-key order (key bytes, then window start)."""
        for store_key, raw in self._store.all():
            start = window_key_schema.window_start_of(store_key)
            key = self._spec.key_serde.deserialize(self._topic, window_key_schema.key_of(store_key))
            value = self._spec.value_serde.deserialize(self._topic, timestamped.value_of(raw))
            yield Windowed(key, TimeWindow(start, start + self._size)), value


class SessionStoreView:
    """A session store by session: `find_sessions(key, earliest_end, latest_start)` as `(Windowed, value)`
    pairs, oldest end first, and `fetch_session(key, start, end)` (Kafka's `ReadOnlySessionStore`)."""

    def __init__(self, store: KeyValueStore, spec: StoreSpec, serde_topic: str) -> None:
        self._store = store
        self._spec = spec
        self._topic = serde_topic

    @property
    def name(self) -> str:
        return self._spec.name

    def _key_bytes(self, key: Any) -> bytes:
        return self._spec.key_serde.serialize(self._topic, key) or b""

    def fetch_session(self, key: Any, start: int, end: int) -> Any:
        """The aggregate of `key`'s session `[start, end]`, or None."""
        raw = self._store.get(session_key_schema.to_store_key(self._key_bytes(key), start, end))
        return None if raw is None else self._spec.value_serde.deserialize(self._topic, raw)

    def find_sessions(self, key: Any, earliest_end: int, latest_start: int) -> Iterator[tuple[Windowed, Any]]:
        """`key`'s sessions ending at or after `earliest_end` and starting at or before `latest_start`."""
        for store_key, raw in find_sessions(self._store, self._key_bytes(key), earliest_end, latest_start):
            window = SessionWindow(session_key_schema.start_of(store_key), session_key_schema.end_of(store_key))
            yield Windowed(key, window), self._spec.value_serde.deserialize(self._topic, raw)

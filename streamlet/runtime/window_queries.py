"""Interactive queries of window and session stores (Kafka Streams' `ReadOnlyWindowStore`, `ReadOnlySessionStore`).

A window store's keys are `WindowKeySchema` keys (record key + window start + seqnum), a session store's
`SessionKeySchema` keys (record key + end + start), so a plain `get(key)` of the record key finds nothing
and cannot even be routed. These views take the record key and a time range instead, as Kafka's do, and
answer `(Windowed(key, window), value)` pairs. They keep `ReadOnlyKeyValueStore`'s rules: a key is read on
the client whose active task owns its partition (else `KeyNotLocalError` names the owner, and the web server
forwards there), nothing answers while a rebalance or a restore is under way, and `all()` covers this
client's partitions only.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from aiokafka.structs import TopicPartition

from streamlet.runtime.queries import LocalTasksSource, ReadOnlyKeyValueStore, StreamsMetadataState
from streamlet.state import session_key_schema, window_key_schema
from streamlet.state.session_store import find_sessions
from streamlet.topology.session_windows import SessionWindow, SessionWindows
from streamlet.topology.windows import TimeWindow, Windowed

__all__ = ["ReadOnlySessionStore", "ReadOnlyWindowStore", "store_view"]

#: the latest time a range may name (Kafka's `Long.MAX_VALUE` bound)
MAX_TIME = 2**63 - 1
_MAX_SEQNUM = 2**31 - 1


class ReadOnlyWindowStore(ReadOnlyKeyValueStore):
    """A window store by key and time (Kafka's `ReadOnlyWindowStore`): `fetch(key, window_start)` for one
    window, `fetch_range(key, time_from, time_to)` for the key's windows starting in that range,
    `windows_at(key, time)` for those holding an event time, `all()` / `fetch_all(...)` for this client's."""

    def __init__(self, name: str, state: StreamsMetadataState, *args: Any, **kwargs: Any) -> None:
        super().__init__(name, state, *args, **kwargs)
        self._size_ms: int = state.store_windows(name).size_ms

    def __repr__(self) -> str:
        return f"ReadOnlyWindowStore({self.name!r})"

    def get(self, key: Any) -> Any:
        raise TypeError(
            f"store {self.name!r} is a window store: read it by key and time, fetch(key, window_start) or "
            "fetch_range(key, time_from, time_to)"
        )

    def fetch(self, key: Any, window_start: int) -> Any:
        """The value of `key`'s window starting at `window_start` (epoch ms), or None."""
        raw = self.get_raw(window_key_schema.to_store_key(self.serialize_key(key), window_start))
        return None if raw is None else self._value_serde.deserialize(self.name, raw)

    def fetch_range(self, key: Any, time_from: int, time_to: int) -> list[tuple[Windowed, Any]]:
        """`key`'s windows whose start is in `[time_from, time_to]` (epoch ms), oldest first."""
        key_bytes = self.serialize_key(key)
        lower = window_key_schema.to_store_key(key_bytes, max(0, time_from))
        upper = window_key_schema.to_store_key(key_bytes, time_to, _MAX_SEQNUM)
        store = self._store_for(lower)
        entries = (
            (store_key, raw)
            for store_key, raw in store.range(lower, upper)
            if window_key_schema.key_of(store_key) == key_bytes  # a longer key with this prefix sorts in between
            and time_from <= window_key_schema.window_start_of(store_key) <= time_to
        )
        return list(self._windowed(self._plain(entries)))

    def windows_at(self, key: Any, time: int) -> list[tuple[Windowed, Any]]:
        """`key`'s windows holding event time `time` (epoch ms): one when tumbling, up to size/advance hopping."""
        return self.fetch_range(key, time - self._size_ms + 1, time)

    def all(self) -> Iterator[tuple[Windowed, Any]]:
        """Every live window of this client's partitions, partition after partition, in store-key order."""
        for store in self._local_stores():
            yield from self._windowed(self._plain(store.all()))

    def fetch_all(self, time_from: int, time_to: int) -> Iterator[tuple[Windowed, Any]]:
        """This client's windows whose start is in `[time_from, time_to]`."""
        return (entry for entry in self.all() if time_from <= entry[0].window.start <= time_to)

    def range(self, from_key: Any, to_key: Any) -> Iterator[tuple[Any, Any]]:
        raise TypeError(f"store {self.name!r} is a window store: fetch_range(key, ...) or fetch_all(...)")

    def _windowed(self, entries: Iterable[tuple[bytes, bytes]]) -> Iterator[tuple[Windowed, Any]]:
        kd, vd, name, size = self._key_serde.deserialize, self._value_serde.deserialize, self.name, self._size_ms
        for store_key, raw in entries:
            start = window_key_schema.window_start_of(store_key)
            key = kd(name, window_key_schema.key_of(store_key))
            yield Windowed(key, TimeWindow(start, start + size)), vd(name, raw)


class ReadOnlySessionStore(ReadOnlyKeyValueStore):
    """A session store by key (Kafka's `ReadOnlySessionStore`): `fetch(key)` for all of `key`'s sessions,
    `find_sessions(key, earliest_end, latest_start)` for those overlapping a time range,
    `fetch_session(key, start, end)` for one."""

    def __repr__(self) -> str:
        return f"ReadOnlySessionStore({self.name!r})"

    def get(self, key: Any) -> Any:
        raise TypeError(f"store {self.name!r} is a session store: fetch(key) or find_sessions(key, from, to)")

    def fetch(self, key: Any) -> list[tuple[Windowed, Any]]:
        """Every live session of `key`, oldest end first."""
        return self.find_sessions(key, 0, MAX_TIME)

    def find_sessions(self, key: Any, earliest_end: int, latest_start: int) -> list[tuple[Windowed, Any]]:
        """`key`'s sessions ending at or after `earliest_end` and starting at or before `latest_start`."""
        key_bytes = self.serialize_key(key)
        store = self._store_for(session_key_schema.to_store_key(key_bytes, 0, 0))
        found = self._plain(find_sessions(store, key_bytes, earliest_end, latest_start))
        return list(self._sessions(found))

    def fetch_session(self, key: Any, start: int, end: int) -> Any:
        """The value of `key`'s session `[start, end]`, or None."""
        raw = self.get_raw(session_key_schema.to_store_key(self.serialize_key(key), start, end))
        return None if raw is None else self._value_serde.deserialize(self.name, raw)

    def all(self) -> Iterator[tuple[Windowed, Any]]:
        for store in self._local_stores():
            yield from self._sessions(self._plain(store.all()))

    def range(self, from_key: Any, to_key: Any) -> Iterator[tuple[Any, Any]]:
        raise TypeError(f"store {self.name!r} is a session store: fetch(key) or find_sessions(key, from, to)")

    def _sessions(self, entries: Iterable[tuple[bytes, bytes]]) -> Iterator[tuple[Windowed, Any]]:
        kd, vd, name = self._key_serde.deserialize, self._value_serde.deserialize, self.name
        for store_key, raw in entries:
            window = SessionWindow(session_key_schema.start_of(store_key), session_key_schema.end_of(store_key))
            yield Windowed(kd(name, session_key_schema.key_of(store_key)), window), vd(name, raw)


def store_view(
    name: str,
    state: StreamsMetadataState,
    running: Callable[[], bool],
    tasks: Callable[[], Iterable[LocalTasksSource]],
    *,
    max_standby_lag: int | None = None,
    standby_end_offset: Callable[[TopicPartition], int | None] | None = None,
) -> ReadOnlyKeyValueStore:
    """The view of `name` its kind calls for: a window store's, a session store's, else a key-value store's."""
    windows = state.store_windows(name) if state.known_store(name) else None
    cls: type[ReadOnlyKeyValueStore] = ReadOnlyKeyValueStore
    if isinstance(windows, SessionWindows):
        cls = ReadOnlySessionStore
    elif windows is not None:
        cls = ReadOnlyWindowStore
    return cls(name, state, running, tasks, max_standby_lag=max_standby_lag, standby_end_offset=standby_end_offset)

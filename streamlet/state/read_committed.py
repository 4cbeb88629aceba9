"""ReadCommittedStore: a transactional store as interactive queries see it under exactly-once.

Kafka Streams' isolation-level rule (KIP-892): under exactly-once, interactive queries read committed data
only (READ_COMMITTED), never the writes of a transaction that may still abort, which live in the record
cache and in the store's uncommitted writes. This view reads the RocksDB store underneath both, so a query
answers the state as of the task's last commit (at most `commit_interval_ms` old). At-least-once keeps
READ_UNCOMMITTED: queries read through the cache, as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Protocol

from streamlet.state.store import KeyValue


class CommittedReads(Protocol):
    """What a transactional store offers for committed reads (RocksDBStore, RocksDBWindowStore)."""

    @property
    def name(self) -> str: ...

    def get_committed(self, key: bytes) -> bytes | None: ...

    def range_committed(self, from_key: bytes | None, to_key: bytes | None) -> Iterator[KeyValue]: ...

    def approximate_num_entries(self) -> int: ...


class ReadCommittedStore:
    """Read-only: `get`, `range`, `all` and `approximate_num_entries` of the committed data."""

    def __init__(self, store: CommittedReads) -> None:
        self._store = store

    def __repr__(self) -> str:
        return f"ReadCommittedStore({self._store!r})"

    @property
    def name(self) -> str:
        return self._store.name

    def get(self, key: bytes) -> bytes | None:
        return self._store.get_committed(key)

    def range(self, from_key: bytes | None, to_key: bytes | None) -> Iterator[KeyValue]:
        return self._store.range_committed(from_key, to_key)

    def all(self) -> Iterator[KeyValue]:
        return self._store.range_committed(None, None)

    def approximate_num_entries(self) -> int:
        return self._store.approximate_num_entries()

"""Interactive queries of global stores: every client answers from its own full copy.

A global table's store holds every partition of its topic on every client, restored before the stream threads
start and then followed by the global thread (`streamlet.runtime.global_stream_thread`). So a query of it never
goes to another host and never waits for a rebalance: any key is local, as Kafka Streams'
`GlobalStateStoreProvider` answers it. The view reads while the client runs (restoration is over by then).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlet.runtime.queries import (
    NOT_RUNNING,
    QueryUnavailableError,
    ReadOnlyKeyValueStore,
    StreamsMetadataState,
    UnknownStoreError,
)
from streamlet.state import timestamped

__all__ = ["GlobalReadOnlyKeyValueStore"]


class GlobalReadOnlyKeyValueStore(ReadOnlyKeyValueStore):
    """A read-only view of global store `name`: the client's whole copy, with `ReadOnlyKeyValueStore`'s typed
    API (`get`, `range`, `all`, `approximate_num_entries`, `scan`). It has no tasks, partitions or standbys to
    route by, so it sets only the base's serdes and reads its one store."""

    def __init__(self, name: str, state: StreamsMetadataState, running: Callable[[], bool], store: Callable[[], Any]):
        if not state.is_global(name):
            raise UnknownStoreError(f"{name!r} is not a global store; global stores: {state.global_store_names()}")
        self.name = name
        self._key_serde, self._value_serde = state.store_serdes(name)
        self._timestamped = True  # a global store keeps timestamp + value, as Kafka's
        self._running = running
        self._store = store

    def __repr__(self) -> str:
        return f"GlobalReadOnlyKeyValueStore({self.name!r})"

    def get_raw(self, key: bytes) -> bytes | None:
        result: bytes | None = self._local_stores()[0].get(key)
        return None if result is None else timestamped.value_of(result)

    def _local_stores(self) -> list[Any]:
        store = self._store() if self._running() else None
        if store is None:
            raise QueryUnavailableError(NOT_RUNNING, "this client is not running (starting or shutting down)")
        return [store]

"""RocksDBSessionStore: a session store on RocksDB, segmented by session end like Kafka's `RocksDBSessionStore`.

Keys are `SessionKeySchema` store keys (record key + 8-byte end + 8-byte start) and values the plain
serialized aggregate, so the changelog holds exactly what Kafka's session store changelog holds, and the
caching and change-logging layers wrap it unchanged (restoration writes back through `put_all`).

The segmentation, expiry and stream-time rules are the window store's (`RocksDBWindowStore`), keyed by the
session's end time (Kafka's `SessionKeySchema.segmentTimestamp`): a session expires once stream time passes
its end by the retention, whatever its start.
"""

from __future__ import annotations

from collections.abc import Iterator

from streamlet.state import session_key_schema as schema
from streamlet.state.store import KeyValue, KeyValueStore
from streamlet.state.window_store import RocksDBWindowStore


class RocksDBSessionStore(RocksDBWindowStore):
    """A persistent session store keyed by `SessionKeySchema` store keys (see the module docstring)."""

    def segment_timestamp(self, store_key: bytes) -> int:
        return schema.end_of(store_key)


def find_sessions(store: KeyValueStore, key: bytes, earliest_end: int, latest_start: int) -> Iterator[KeyValue]:
    """The sessions of `key` ending at or after `earliest_end` and starting at or before `latest_start`,
    oldest end first (Kafka's `SessionStore.findSessions`), read through any layer's `range`."""
    lower, upper = schema.search_range(key, earliest_end, latest_start)
    for store_key, value in store.range(lower, upper):
        if (
            len(store_key) == len(key) + schema.SUFFIX_SIZE
            and store_key.startswith(key)
            and schema.end_of(store_key) >= earliest_end
            and schema.start_of(store_key) <= latest_start
        ):
            yield store_key, value

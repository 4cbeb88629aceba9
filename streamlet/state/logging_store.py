"""ChangeLoggingKeyValueStore: mirrors every write of the store below it into the changelog.

The changelog topic (`<application_id>-<store>-changelog`, compacted, partition = task partition) is the
store's durable copy: restoration replays it, standby replicas follow it, and that is why RocksDB runs
without a WAL. This layer only *hands* records to a sink; the runtime's sink sends them with the producer
and, once acknowledged, reports their offsets to `ProcessorStateManager.update_changelog_offsets`.

Writes go to the inner store first and to the sink second (Kafka Streams' order): a write the store
rejected is never logged.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator

from streamlet.state.store import Entry, KeyValue, KeyValueStore, check_key, check_value

#: `sink(key, value)`; value None is a tombstone (delete).
ChangelogSink = Callable[[bytes, bytes | None], None]


class ChangeLoggingKeyValueStore:
    """Wraps a `KeyValueStore`, calling `changelog_sink(key, value)` after every write to it."""

    def __init__(self, inner: KeyValueStore, changelog_sink: ChangelogSink) -> None:
        self.inner = inner
        self._sink = changelog_sink

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def persistent(self) -> bool:
        return self.inner.persistent

    def get(self, key: bytes) -> bytes | None:
        return self.inner.get(key)

    def put(self, key: bytes, value: bytes | None) -> None:
        self.inner.put(key, value)
        self._sink(key, value)

    def put_all(self, entries: Iterable[Entry]) -> None:
        """One write batch to the inner store (atomic on RocksDB), then one changelog record per entry."""
        batch = [(check_key(key), check_value(value)) for key, value in entries]
        if not batch:
            return
        self.inner.put_all(batch)
        sink = self._sink
        for key, value in batch:
            sink(key, value)

    def delete(self, key: bytes) -> bytes | None:
        old = self.inner.delete(key)
        self._sink(key, None)
        return old

    def range(self, from_key: bytes | None, to_key: bytes | None) -> Iterator[KeyValue]:
        return self.inner.range(from_key, to_key)

    def all(self) -> Iterator[KeyValue]:
        return self.inner.all()

    def approximate_num_entries(self) -> int:
        return self.inner.approximate_num_entries()

    def flush(self) -> None:
        self.inner.flush()

    def close(self) -> None:
        self.inner.close()

"""GlobalStateManager: the global stores of one client and their offsets (Kafka's `GlobalStateManagerImpl`).

A global store is a full copy of its source topic, which is also its changelog: nothing is logged. Each store
keeps, per source partition, the offset of the next record to read (the consumer position, as Kafka's global
offsets are) in its `offsets` column family (KIP-1035), written in the same RocksDB batch as the records it
covers: the data and its offset cannot disagree, after a crash included (atomic flush). Layout, as Kafka
Streams 4.4.0's::

    <state_dir>/<application_id>/global/
        rocksdb/<store>/                    one timestamped RocksDB store per global table, offsets inside
        .checkpoint                         only from an older version: migrated into the stores, then removed

Opening follows the task stores' rule (`streamlet.state.legacy_checkpoint`): a store with data but no offset,
or an unreadable one, is wiped, once, and re-read from the topic's beginning: re-reading restores every live
key, but a key whose tombstone was compacted away would survive in the old store. Records are applied as the
global table's source does (null key skipped, null value deletes, the record timestamp in front of the
value), in bounded write batches.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from aiokafka.structs import TopicPartition

from streamlet.state.checkpoint import CHECKPOINT_FILE_NAME
from streamlet.state.legacy_checkpoint import LegacyCheckpoint, open_store_offsets
from streamlet.state.rocksdb_store import DB_FILE_DIR, RocksDBStore
from streamlet.state.state_manager import DEFAULT_RESTORE_CHUNK_RECORDS, ChangelogRecord

GLOBAL_DIR_NAME = "global"


class GlobalStateManager:
    """Opens the global stores (`{store: source topic}`), applies their topics' records and commits their offsets."""

    def __init__(
        self,
        app_dir: str | Path,
        stores: Mapping[str, str],
        *,
        chunk_records: int = DEFAULT_RESTORE_CHUNK_RECORDS,
    ) -> None:
        self.global_dir = Path(app_dir) / GLOBAL_DIR_NAME
        self.global_dir.mkdir(parents=True, exist_ok=True)
        self._chunk_records = chunk_records
        self._topics = dict(stores)
        self._store_of_topic = {topic: store for store, topic in stores.items()}
        self._offsets: dict[TopicPartition, int] = {}
        self._stores: dict[str, RocksDBStore] = {}
        legacy = LegacyCheckpoint(
            self.global_dir / CHECKPOINT_FILE_NAME, "global stores", lambda tp: tp.topic in self._store_of_topic
        )
        try:
            for name, topic in stores.items():
                store = self._stores[name] = RocksDBStore(name, self.global_dir / DB_FILE_DIR / name)
                self._offsets.update(open_store_offsets(store, _of_topic(topic), legacy, f"global store {name!r}"))
        except BaseException:
            _close_all(self._stores.values())
            raise
        self._closed = False

    @property
    def stores(self) -> dict[str, RocksDBStore]:
        """The global stores by name, as the stream tasks' joins read them."""
        return dict(self._stores)

    def checkpointed_offset(self, tp: TopicPartition) -> int | None:
        """Where to resume reading `tp`: the next offset the store lacks, or None (from the beginning)."""
        return self._offsets.get(tp)

    def apply(self, tp: TopicPartition, records: Sequence[ChangelogRecord]) -> None:
        """Apply a partition's records in order, one write batch per chunk with the partition's next offset."""
        store = self._stores[self._store_of_topic[tp.topic]]
        step = self._chunk_records
        for start in range(0, len(records), step):
            chunk = records[start : start + step]
            position = chunk[-1].offset + 1
            store.apply_changelog_records(chunk, timestamped=True, offsets={tp: position})
            self._offsets[tp] = position

    def advance(self, tp: TopicPartition, position: int) -> None:
        """The consumer moved past records that changed nothing (transaction markers): remember it (the store
        gets it at the next `checkpoint`)."""
        if position > self._offsets.get(tp, 0):
            self._offsets[tp] = position

    def offsets(self) -> dict[TopicPartition, int]:
        """Per source partition, the next offset to read (what the stores will hold after a checkpoint now)."""
        return dict(self._offsets)

    def checkpoint(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        """Flush each store, write `offsets` (default: the current ones) into it and flush again (Kafka's
        `commit`). Blocking disk I/O: run it off the event loop with offsets taken on it first. Records applied
        meanwhile wrote their own offsets with them; one of those a stale `offsets` overwrites only makes a
        restart re-read a few records, harmlessly (the last write of a key wins again)."""
        offsets = self.offsets() if offsets is None else offsets
        for name, store in self._stores.items():
            store.flush()
            mine = {tp: offset for tp, offset in offsets.items() if tp.topic == self._topics[name]}
            if mine:
                store.commit(mine)
                store.flush()

    def close(self, *, clean: bool) -> None:
        """Close the stores; clean: checkpoint first."""
        if self._closed:
            return
        self._closed = True
        try:
            if clean:
                self.checkpoint()
        finally:
            _close_all(self._stores.values())


def _of_topic(topic: str) -> Callable[[TopicPartition], bool]:
    return lambda tp: tp.topic == topic


def _close_all(stores: Iterable[RocksDBStore]) -> None:
    first: BaseException | None = None
    for store in stores:
        try:
            store.close()
        except Exception as exc:  # close the others regardless
            first = first or exc
    if first is not None:
        raise first

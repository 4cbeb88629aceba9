"""GlobalStateManager: the global stores of one client and their `.checkpoint` (Kafka's `GlobalStateManagerImpl`).

A global store is a full copy of its source topic, which is also its changelog: nothing is logged, and the
checkpoint records, per source partition, the offset of the next record to read (the consumer position, as
Kafka's global checkpoint does). Layout, as Kafka Streams'::

    <state_dir>/<application_id>/global/
        .checkpoint                         <topic> <partition> <next offset>, OffsetCheckpoint's format
        rocksdb/<store>/                    one timestamped RocksDB store per global table

Why the store is wiped when the checkpoint is missing or unreadable: re-reading the topic from its beginning
restores every live key, but a key whose tombstone was compacted away would survive in the old store. Records
are applied as the global table's source does (null key skipped, null value deletes, the record timestamp in
front of the value), in bounded write batches.
"""

from __future__ import annotations

import logging
import shutil
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from aiokafka.structs import TopicPartition

from streamlet.errors import CheckpointError
from streamlet.state.checkpoint import CHECKPOINT_FILE_NAME, OffsetCheckpoint
from streamlet.state.rocksdb_store import DB_FILE_DIR, RocksDBStore
from streamlet.state.state_manager import DEFAULT_RESTORE_CHUNK_RECORDS, ChangelogRecord

log = logging.getLogger(__name__)

GLOBAL_DIR_NAME = "global"


class GlobalStateManager:
    """Opens the global stores (`{store: source topic}`), applies their topics' records and checkpoints them."""

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
        self._checkpoint = OffsetCheckpoint(self.global_dir / CHECKPOINT_FILE_NAME)
        self._store_of_topic = {topic: store for store, topic in stores.items()}
        self._offsets = self._load_checkpoint()
        checkpointed = {tp.topic for tp in self._offsets}
        for store, topic in stores.items():
            if topic not in checkpointed:  # no trustworthy checkpoint: start empty (see the module docstring)
                shutil.rmtree(self.global_dir / DB_FILE_DIR / store, ignore_errors=True)
        self._stores = {name: RocksDBStore(name, self.global_dir / DB_FILE_DIR / name) for name in stores}
        self._closed = False

    def _load_checkpoint(self) -> dict[TopicPartition, int]:
        try:
            loaded = self._checkpoint.read()
        except CheckpointError as exc:
            log.warning("Ignoring the corrupt global checkpoint; the global stores are re-read from the start: %s", exc)
            self._checkpoint.delete()
            return {}
        return {tp: offset for tp, offset in loaded.items() if tp.topic in self._store_of_topic and offset >= 0}

    @property
    def stores(self) -> dict[str, RocksDBStore]:
        """The global stores by name, as the stream tasks' joins read them."""
        return dict(self._stores)

    def checkpointed_offset(self, tp: TopicPartition) -> int | None:
        """Where to resume reading `tp`: the next offset the stores lack, or None (from the beginning)."""
        return self._offsets.get(tp)

    def apply(self, tp: TopicPartition, records: Sequence[ChangelogRecord]) -> None:
        """Apply a partition's records in order, one write batch per chunk, and advance its offset."""
        store = self._stores[self._store_of_topic[tp.topic]]
        step = self._chunk_records
        for start in range(0, len(records), step):
            chunk = records[start : start + step]
            store.apply_changelog_records(chunk, timestamped=True)
            self._offsets[tp] = chunk[-1].offset + 1

    def advance(self, tp: TopicPartition, position: int) -> None:
        """The consumer moved past records that changed nothing (transaction markers): remember it."""
        if position > self._offsets.get(tp, 0):
            self._offsets[tp] = position

    def offsets(self) -> dict[TopicPartition, int]:
        """Per source partition, the next offset to read (what a checkpoint written now would claim)."""
        return dict(self._offsets)

    def checkpoint(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        """Flush the stores, then write `offsets` (default: the current ones). Blocking disk I/O: run it off
        the event loop with offsets taken on it first; records applied during the flush are re-read after a
        crash, harmlessly (the last write of a key wins again)."""
        offsets = self.offsets() if offsets is None else offsets
        for store in self._stores.values():
            store.flush()
        if offsets:
            self._checkpoint.write(offsets)

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


def _close_all(stores: Iterable[RocksDBStore]) -> None:
    first: BaseException | None = None
    for store in stores:
        try:
            store.close()
        except Exception as exc:  # close the others regardless
            first = first or exc
    if first is not None:
        raise first

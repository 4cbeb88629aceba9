"""Opening a store's changelog offsets (KIP-1035), and migrating a `.checkpoint` file of an older version.

Task stores and global stores follow one rule, Kafka Streams 4.4.0's (`LegacyCheckpointingStateStore.
migrateLegacyOffsets`, then `StateStore.committedOffset`): the offsets a RocksDB store keeps in its `offsets`
column family are the truth; an entry of a `.checkpoint` file left by an older version is written into the
store that lacks one, and the file is removed once every entry found its store. Where streamlet is stricter
than Kafka: a store that has data but no offset (or an unreadable one) is wiped, once, because restoring from
the changelog's beginning on top of it would keep keys whose tombstones were compacted away.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

from aiokafka.structs import TopicPartition

from streamlet.errors import CheckpointError, StateStoreCorruptedError
from streamlet.state.checkpoint import OFFSET_UNKNOWN, OffsetCheckpoint
from streamlet.state.rocksdb_store import Offsets

log = logging.getLogger(__name__)


class OffsetStore(Protocol):
    """A persistent store that keeps its changelog offsets (RocksDBStore, RocksDBWindowStore)."""

    @property
    def transactional(self) -> bool: ...

    def committed_offsets(self) -> dict[TopicPartition, int]: ...

    def commit(self, offsets: Offsets) -> None: ...

    def approximate_num_uncommitted_bytes(self) -> int: ...

    def is_empty(self) -> bool: ...

    def wipe(self) -> None: ...

    def flush(self) -> None: ...


class LegacyCheckpoint:
    """The entries of a pre-KIP-1035 `.checkpoint` file still waiting for their store.

    `owned(tp)` says whether a partition belongs to one of the caller's stores; other entries are dropped (logged).
    An unreadable file is deleted at once: nobody knows which changelog prefix the stores reflect, so their own
    offsets decide (and a store with data but none is wiped).
    """

    def __init__(self, path: Path, where: str, owned: Callable[[TopicPartition], bool]) -> None:
        self._file = OffsetCheckpoint(path)
        self._where = where
        self._entries: dict[TopicPartition, int] = {}
        try:
            loaded = self._file.read()
        except CheckpointError as exc:
            log.warning(
                "%s: ignoring corrupt checkpoint; stores without an offset of their own are restored from scratch: %s",
                where,
                exc,
            )
            self._file.delete()
            return
        for tp, offset in loaded.items():
            if owned(tp):
                self._entries[tp] = offset
            else:
                log.info("%s: checkpoint entry for %s matches no store; ignored", where, tp)
        if not self._entries:
            self._file.delete()

    def take(self, owned: Callable[[TopicPartition], bool]) -> dict[TopicPartition, int]:
        """Remove and return the entries of one store's partitions (OFFSET_UNKNOWN ones are dropped)."""
        taken = {tp: offset for tp, offset in self._entries.items() if owned(tp)}
        for tp in taken:
            del self._entries[tp]
        return {tp: offset for tp, offset in taken.items() if offset != OFFSET_UNKNOWN}

    def remove_if_migrated(self) -> None:
        """Remove the file once every entry of it has found its store (Kafka's migration)."""
        if not self._entries and self._file.path.exists():
            self._file.delete()
            log.info("%s: changelog offsets now live in the stores; removed %s", self._where, self._file.path)

    def delete(self) -> None:
        self._entries = {}
        self._file.delete()


def open_store_offsets(
    store: OffsetStore, owned: Callable[[TopicPartition], bool], legacy: LegacyCheckpoint, where: str
) -> dict[TopicPartition, int]:
    """The changelog offsets `store` keeps for its partitions (`owned`), after migrating the legacy entries it
    lacks; wipes it if its offsets are unreadable, or if it has data and no offset at all.

    A migrated offset is committed and flushed at once, so the file can go. The store's own offset wins over a
    stale file entry, as it was written with the data it covers.
    """
    try:
        offsets = {tp: offset for tp, offset in store.committed_offsets().items() if owned(tp)}
    except StateStoreCorruptedError as exc:
        log.warning("%s: its changelog offset is unreadable, wiping it to restore from the changelog: %s", where, exc)
        store.wipe()
        offsets = {}
    migrated = {tp: offset for tp, offset in legacy.take(owned).items() if tp not in offsets}
    if migrated:
        store.commit(migrated)
        store.flush()
        offsets.update(migrated)
        for tp, offset in migrated.items():
            log.info("%s: migrated changelog offset %d of %s from .checkpoint into the store", where, offset, tp)
    if not offsets and not store.is_empty():
        log.warning(
            "%s has local data but no changelog offset; wiping it so it is restored from its changelog from scratch",
            where,
        )
        store.wipe()
    legacy.remove_if_migrated()
    return offsets

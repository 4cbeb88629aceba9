"""ProcessorStateManager: one task's stores and their changelog offsets, kept in the stores (KIP-1035).

Lifecycle the runtime follows (active or standby task, one stream thread):

1. `StateDirectory.lock_task(task, thread)`; `psm = ProcessorStateManager(task, state_dir.task_dir(task),
   {store_name: changelog TopicPartition}, transactional=exactly_once)`. A `.checkpoint` file left by an
   older version is read here: it is migrated into the stores as they register, then removed (as Kafka does).
2. `register_store(name, cache=..., changelog_sink=...)` for each store, in topology order. Active tasks pass
   the thread's RecordCache and a sink that produces to the store's changelog partition; standbys pass
   neither. A persistent store reports its changelog offset from its `offsets` column family; one that has
   data but no offset (or an unreadable one) is wiped, with a WARNING, and restored from its changelog.
3. Restore: seek a changelog consumer to `changelog_offsets()[tp]`, read up to the end offset, and feed
   bounded chunks to `restore_records(tp, records)` (standbys do this continuously). Each chunk and its
   offset are one RocksDB write.
4. Commit (in this order): `flush_caches()` -> wait for the producer to ack the changelog records (under
   exactly-once: commit the Kafka transaction) -> `update_changelog_offsets({tp: offset of the last acked
   record})` -> at-least-once: commit input offsets, then `checkpoint()` (flush, offsets into the stores);
   exactly-once: `commit_stores()`, which moves each transactional store's uncommitted writes into RocksDB
   together with its offsets. Standbys: `checkpoint()`.
5. `close(clean=True)` on revocation/shutdown (flush + checkpoint); `close(clean=False)` after an error
   (nothing more is written; a transactional store's uncommitted writes are dropped, so its state is that
   of the last commit and needs no wipe). `wipe()` discards the local state (e.g. the changelog was truncated).

Offsets are "the offset of the last changelog record reflected in the store" (None = unknown), the same
number a `.checkpoint` file held; `changelog_offsets()` reports it + 1, Kafka Streams' convention for
offset sums and for the position to restore from.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast

from aiokafka.structs import TopicPartition

from streamlet.errors import StateStoreError
from streamlet.state import timestamped
from streamlet.state.caching_store import CachingKeyValueStore
from streamlet.state.checkpoint import CHECKPOINT_FILE_NAME
from streamlet.state.legacy_checkpoint import LegacyCheckpoint, OffsetStore, open_store_offsets
from streamlet.state.logging_store import ChangeLoggingKeyValueStore, ChangelogSink
from streamlet.state.read_committed import CommittedReads, ReadCommittedStore
from streamlet.state.record_cache import RecordCache
from streamlet.state.rocksdb_store import DB_FILE_DIR, RocksDBStore
from streamlet.state.session_store import RocksDBSessionStore
from streamlet.state.store import InMemoryKeyValueStore, KeyValueStore
from streamlet.state.time_ordered_buffer import TimeOrderedKeyValueBuffer
from streamlet.state.window_store import RocksDBWindowStore
from streamlet.task_id import TaskId

log = logging.getLogger(__name__)


#: One changelog record to restore: (offset, key, value); value None is a delete.
class ChangelogRecord(Protocol):
    """A consumed changelog record (aiokafka's ConsumerRecord, or its decoded batch record)."""

    @property
    def offset(self) -> int: ...

    @property
    def key(self) -> bytes | None: ...

    @property
    def value(self) -> bytes | None: ...

    @property
    def timestamp(self) -> int: ...


DEFAULT_RESTORE_CHUNK_RECORDS = 10_000


@dataclass
class _Store:
    name: str
    inner: KeyValueStore  # the bottom store (RocksDB or in-memory): restores and wipes go here
    outer: KeyValueStore  # what processors use
    caching: CachingKeyValueStore | None
    changelog: TopicPartition | None
    timestamped: bool = False  # values are timestamp + value; changelog records hold the plain value


class ProcessorStateManager:
    """The state of one task: its registered stores and their changelog offsets."""

    def __init__(
        self,
        task_id: TaskId,
        task_dir: str | os.PathLike[str],
        changelog_partitions: Mapping[str, TopicPartition],
        *,
        restore_chunk_records: int = DEFAULT_RESTORE_CHUNK_RECORDS,
        source_changelogs: Iterable[TopicPartition] = (),
        transactional: bool = False,
    ) -> None:
        if restore_chunk_records < 1:
            raise ValueError("restore_chunk_records must be >= 1")
        self.task_id = task_id
        self.task_dir = Path(task_dir)
        self.task_dir.mkdir(parents=True, exist_ok=True)
        self._restore_chunk_records = restore_chunk_records
        self._changelogs: dict[str, TopicPartition] = dict(changelog_partitions)
        self._store_by_changelog: dict[TopicPartition, str] = {}
        for name, tp in self._changelogs.items():
            if tp in self._store_by_changelog:
                raise ValueError(
                    f"task {task_id}: stores {self._store_by_changelog[tp]!r} and {name!r} share changelog {tp}"
                )
            self._store_by_changelog[tp] = name
        # changelogs that are the task's own source partitions (`reuse.ktable.source.topics`)
        self._source_changelogs = frozenset(source_changelogs)
        self._offsets: dict[TopicPartition, int | None] = dict.fromkeys(self._store_by_changelog)
        self._stores: dict[str, _Store] = {}
        # KIP-892: under exactly-once the RocksDB stores buffer their writes until `commit_stores`
        self.transactional = transactional
        # the offsets persisted in the stores, as last read or written
        self._checkpointed: dict[TopicPartition, int] = {}
        self._legacy = LegacyCheckpoint(
            self.task_dir / CHECKPOINT_FILE_NAME, f"Task {task_id}", lambda tp: tp in self._offsets
        )
        self._closed = False

    def _open_offsets(self, name: str, store: OffsetStore, changelog: TopicPartition) -> None:
        """Read a persistent store's changelog offset; migrate it from `.checkpoint`, or wipe the store
        (`open_store_offsets`: after an unclean shutdown a store with data but no offset may hold writes the
        changelog never got, or lack writes that were never flushed, the WAL being off)."""
        offsets = open_store_offsets(
            store, lambda tp: tp == changelog, self._legacy, f"Task {self.task_id}: store {name!r}"
        )
        offset = offsets.get(changelog)
        if offset is not None:
            self._offsets[changelog] = offset
            self._checkpointed[changelog] = offset

    # ------------------------------------------------------------------ stores

    def store_dir(self, name: str) -> Path:
        """Where a persistent store's RocksDB lives: `<task_dir>/rocksdb/<name>`."""
        return self.task_dir / DB_FILE_DIR / name

    def register_store(
        self,
        name: str,
        *,
        persistent: bool = True,
        cache: RecordCache | None = None,
        changelog_sink: ChangelogSink | None = None,
        store: KeyValueStore | None = None,
        timestamped: bool = False,
        window_retention_ms: int | None = None,
        session_retention_ms: int | None = None,
        retain_duplicates: bool = False,
    ) -> KeyValueStore:
        """Open (or take) the store `name`, wrap it, and return what processors should use.

        * `persistent`: RocksDB under `store_dir(name)`, else an in-memory store (ignored with `store`).
        * `changelog_sink`: wrap in a ChangeLoggingKeyValueStore (active tasks; the store must have a
          changelog partition). Standbys pass None: they only write through `restore_records`.
        * `cache`: wrap in a CachingKeyValueStore using the thread's RecordCache (namespace
          `"<task>-<store>"`); call `set_flush_listener` on the returned store to forward flushed updates.
        * `timestamped`: the store holds `streamlet.state.timestamped` values; restoration rebuilds them from
          each changelog record's value and timestamp (the changelog sink must strip them likewise).
        * `window_retention_ms`: a persistent store is a `RocksDBWindowStore` (WindowKeySchema keys, segmented
          by time) keeping windows that long behind stream time; with `retain_duplicates`, a stream-stream
          join's store (every key unique: a put of None is skipped).
        * `session_retention_ms`: a persistent store is a `RocksDBSessionStore` (SessionKeySchema keys).

        A logged persistent store reports its changelog offset from the store itself (`_open_offsets`).
        """
        self._check_open()
        if name in self._stores:
            raise ValueError(f"task {self.task_id}: store {name!r} is already registered")
        changelog = self._changelogs.get(name)
        if changelog_sink is not None and changelog is None:
            raise ValueError(f"task {self.task_id}: store {name!r} has a changelog sink but no changelog partition")
        if store is None:
            if persistent:
                path = self.store_dir(name)
                tx = self.transactional
                inner: KeyValueStore
                if window_retention_ms is not None:
                    inner = RocksDBWindowStore(
                        name,
                        path,
                        retention_ms=window_retention_ms,
                        retain_duplicates=retain_duplicates,
                        transactional=tx,
                    )
                elif session_retention_ms is not None:
                    inner = RocksDBSessionStore(name, path, retention_ms=session_retention_ms, transactional=tx)
                else:
                    inner = RocksDBStore(name, path, transactional=tx)
            else:
                inner = InMemoryKeyValueStore(name)
        else:
            if store.name != name:
                raise ValueError(f"task {self.task_id}: store named {store.name!r} registered as {name!r}")
            inner = store
        if changelog is not None and _keeps_offsets(inner):
            try:
                self._open_offsets(name, cast(OffsetStore, inner), changelog)
            except BaseException:
                inner.close()
                raise
        elif changelog is not None:
            self._legacy.take(lambda tp: tp == changelog)
            self._legacy.remove_if_migrated()
        outer: KeyValueStore = inner
        if changelog_sink is not None:
            outer = ChangeLoggingKeyValueStore(outer, changelog_sink)
        caching = None
        if cache is not None:
            caching = CachingKeyValueStore(outer, cache, f"{self.task_id}-{name}")
            outer = caching
        if changelog is not None and not inner.persistent:
            # An in-memory store starts empty whatever a checkpoint says: restore it from the beginning.
            self._offsets[changelog] = None
        self._stores[name] = _Store(name, inner, outer, caching, changelog, timestamped)
        return outer

    def register_buffer(self, buffer: TimeOrderedKeyValueBuffer) -> TimeOrderedKeyValueBuffer:
        """Register a suppression buffer: in memory, so restored from the start of its changelog, which it
        writes itself (at `flush_caches`, in Kafka's buffer format)."""
        self._check_open()
        name = buffer.name
        if name in self._stores:
            raise ValueError(f"task {self.task_id}: store {name!r} is already registered")
        changelog = self._changelogs.get(name)
        if changelog is not None:
            self._offsets[changelog] = None
            self._legacy.take(lambda tp: tp == changelog)
            self._legacy.remove_if_migrated()
        as_store = cast(KeyValueStore, buffer)  # restored through apply_changelog_records, wiped, closed
        self._stores[name] = _Store(name, as_store, as_store, None, changelog)
        return buffer

    def store(self, name: str) -> KeyValueStore:
        """The registered (outermost) store `name`."""
        try:
            return self._stores[name].outer
        except KeyError:
            raise KeyError(f"task {self.task_id}: no store {name!r} registered") from None

    def stores(self) -> dict[str, KeyValueStore]:
        return {name: s.outer for name, s in self._stores.items()}

    def queryable_stores(self) -> dict[str, Any]:
        """What interactive queries read: a transactional store's committed data only (Kafka's READ_COMMITTED
        under exactly-once, `ReadCommittedStore`), else the store processors use (READ_UNCOMMITTED)."""
        return {
            name: ReadCommittedStore(cast(CommittedReads, s.inner))
            if _keeps_offsets(s.inner) and cast(OffsetStore, s.inner).transactional
            else s.outer
            for name, s in self._stores.items()
        }

    def changelog_partitions(self) -> dict[str, TopicPartition]:
        return dict(self._changelogs)

    def changelog_as_source(self, tp: TopicPartition) -> bool:
        """True if the changelog `tp` is a source topic partition (Kafka's `changelogAsSource`): nothing writes
        it for the store, its offsets are the task's consumed ones, and restoration stops at the committed one."""
        return tp in self._source_changelogs

    # ------------------------------------------------------------------ offsets

    def checkpointed_offsets(self) -> dict[TopicPartition, int]:
        """The offsets persisted in the stores, as last read or written."""
        return dict(self._checkpointed)

    def current_offsets(self) -> dict[TopicPartition, int | None]:
        """Offset of the last changelog record reflected in each store (None = unknown)."""
        return dict(self._offsets)

    def changelog_offsets(self) -> dict[TopicPartition, int]:
        """Per changelog partition: last restored/written offset + 1, or 0 if unknown (Kafka's convention).

        This is both where restoration resumes and what offset sums add up for non-running tasks.
        """
        return {tp: 0 if offset is None else offset + 1 for tp, offset in self._offsets.items()}

    def update_changelog_offsets(self, offsets: Mapping[TopicPartition, int]) -> None:
        """Record the offsets of the last changelog records the producer acknowledged.

        Partitions that are not changelogs of this task (e.g. sink topics) are ignored, so the runtime may
        pass everything its producer acknowledged for the task.
        """
        for tp, offset in offsets.items():
            if tp not in self._offsets:
                continue
            if offset < 0:
                raise ValueError(f"task {self.task_id}: invalid changelog offset {offset} for {tp}")
            self._offsets[tp] = offset

    # ------------------------------------------------------------------ restore

    def restore_records(self, tp: TopicPartition, records: Sequence[ChangelogRecord]) -> int:
        """Apply changelog records as the consumer returns them (`.offset`, `.key`, `.value`); returns how many.

        Bypasses cache and logging. Each chunk of at most `restore_chunk_records` records is one write batch
        (atomic, and a bounded call into RocksDB); the restored offset advances to the chunk's last record
        after the write. No per-record tuples: a RocksDB store writes them into its batch directly
        (`apply_changelog_records`), since Kafka only ever hands out bytes or None.
        """
        meta = self._restore_target(tp)
        step = self._restore_chunk_records
        inner = meta.inner
        direct = getattr(inner, "apply_changelog_records", None)
        keeps_offsets = _keeps_offsets(inner)
        applied = 0
        for start in range(0, len(records), step):
            chunk = records[start : start + step]
            last = {tp: chunk[-1].offset}
            if direct is not None and keeps_offsets:
                # the chunk and its offset in one write; a RocksDB store puts the timestamp in front itself
                direct(chunk, timestamped=meta.timestamped, offsets=last)
            elif direct is not None:
                direct(chunk)
            else:
                if meta.timestamped:
                    entries = [
                        (r.key, timestamped.from_changelog(r.value, r.timestamp)) for r in chunk if r.key is not None
                    ]
                else:
                    entries = [(r.key, r.value) for r in chunk if r.key is not None]
                inner.put_all(entries)
                if keeps_offsets:  # a window store: its writes (buffered if transactional) and the offset, at once
                    cast(OffsetStore, inner).commit(last)
            self._invalidate_cached(meta, (r.key for r in chunk if r.key is not None))
            self._offsets[tp] = chunk[-1].offset
            applied += len(chunk)
        return applied

    def _restore_target(self, tp: TopicPartition) -> _Store:
        self._check_open()
        name = self._store_by_changelog.get(tp)
        if name is None:
            raise ValueError(f"task {self.task_id}: {tp} is not a changelog partition of this task")
        meta = self._stores.get(name)
        if meta is None:
            raise StateStoreError(f"task {self.task_id}: store {name!r} must be registered before restoring")
        return meta

    @staticmethod
    def _invalidate_cached(meta: _Store, keys: Iterable[bytes]) -> None:
        """A cached value would shadow the restored one."""
        if meta.caching is not None and meta.caching.cache.entry_count(meta.caching.namespace):
            for key in keys:
                meta.caching.cache.remove(meta.caching.namespace, key)

    # ------------------------------------------------------------------ flush / checkpoint

    def flush_caches(self) -> None:
        """Flush every caching store (registration order), writing dirty entries down and emitting them, and
        log every suppression buffer; then the buffers once more, for what later caches emitted into them
        (Kafka's `flushCache`, then the buffers' part of its `flush`)."""
        calls: list[Callable[[], None]] = []
        buffers: list[Callable[[], None]] = []
        for s in self._stores.values():
            if s.caching is not None:
                calls.append(s.caching.flush_cache)
            elif isinstance(s.inner, TimeOrderedKeyValueBuffer):
                calls.append(s.inner.flush_buffer)
                buffers.append(s.inner.flush_buffer)
        _run_all(calls)
        _run_all(buffers)

    def flush_stores(self) -> None:
        """Flush the bottom stores (RocksDB memtables to SST files), without touching the caches.

        This is the slow part of a flush (disk I/O). rocksdict releases the GIL during it and no cache or
        listener is involved, so it may run in an executor thread.
        """
        self._check_open()
        _run_all(s.inner.flush for s in self._stores.values())

    def flush(self) -> None:
        """`flush_caches()` (on the stream thread: it emits downstream), then `flush_stores()`."""
        self._check_open()
        self.flush_caches()
        self.flush_stores()

    def checkpoint(self) -> None:
        """Write the offsets of the logged persistent stores into the stores (KIP-1035) and flush them.

        Call after `flush()` and `update_changelog_offsets()`. The RocksDB memtables are flushed first and
        again after (cheap when empty) so that the offsets never claim more than is on disk: with the WAL off,
        memtable data would be lost by a crash. A transactional store that still holds uncommitted writes keeps
        the offsets of its last commit. Touches no cache, so it may run in an executor thread like
        `flush_stores()`.
        """
        self._check_open()
        for s in self._stores.values():
            if s.changelog is None or not _keeps_offsets(s.inner):
                continue
            store = cast(OffsetStore, s.inner)
            store.flush()
            if store.approximate_num_uncommitted_bytes():
                continue
            offset = self._offsets[s.changelog]
            store.commit({s.changelog: offset})
            store.flush()
            self._record_persisted(s.changelog, offset)
        self._legacy.remove_if_migrated()

    def commit_stores(self) -> None:
        """Exactly-once, once the Kafka transaction committed: each transactional store writes its uncommitted
        writes and its changelog offset to RocksDB in one batch (KIP-892). A crash before this leaves the store
        at its previous commit, which restores the committed changelog records since; a crash after finds both."""
        self._check_open()
        for s in self._stores.values():
            if not _keeps_offsets(s.inner):
                continue
            store = cast(OffsetStore, s.inner)
            if not store.transactional:
                continue
            offsets: dict[TopicPartition, int | None] = {}
            if s.changelog is not None:
                offset = self._offsets[s.changelog]
                if offset != self._checkpointed.get(s.changelog):
                    offsets[s.changelog] = offset
            if offsets or store.approximate_num_uncommitted_bytes():
                store.commit(offsets)
                for tp, offset in offsets.items():
                    self._record_persisted(tp, offset)

    def _record_persisted(self, tp: TopicPartition, offset: int | None) -> None:
        if offset is None:
            self._checkpointed.pop(tp, None)
        else:
            self._checkpointed[tp] = offset

    def approximate_num_uncommitted_bytes(self) -> int:
        """The bytes the task's transactional stores buffer until the next commit."""
        return sum(
            cast(OffsetStore, s.inner).approximate_num_uncommitted_bytes()
            for s in self._stores.values()
            if _keeps_offsets(s.inner)
        )

    # ------------------------------------------------------------------ wipe / close

    def wipe(self) -> None:
        """Discard all local state: drop caches, delete and reopen the stores empty (their offsets with them)."""
        self._check_open()
        for s in self._stores.values():
            if s.caching is not None:
                s.caching.drop_cache()
            wipe = getattr(s.inner, "wipe", None)
            if wipe is None:
                raise StateStoreError(f"task {self.task_id}: store {s.name!r} cannot be wiped")
            wipe()
        self._legacy.delete()
        self._checkpointed = {}
        self._offsets = dict.fromkeys(self._offsets)

    def close(self, clean: bool) -> None:
        """Close every store. Clean: flush and checkpoint first. Unclean: drop caches, write nothing.

        If the clean path fails, the stores are still closed (uncleanly) and the error is re-raised.
        """
        if self._closed:
            return
        if clean:
            try:
                self.flush()
                self.checkpoint()
            except BaseException:
                self._close_stores(clean=False)
                raise
        self._close_stores(clean=clean)

    def _close_stores(self, clean: bool) -> None:
        self._closed = True
        errors: list[BaseException] = []
        for s in self._stores.values():
            try:
                if s.caching is not None and not clean:
                    s.caching.drop_cache()
                s.outer.close()
            except Exception as exc:  # close the others regardless
                errors.append(exc)
        if errors:
            raise StateStoreError(f"task {self.task_id}: closing stores failed: {errors[0]}") from errors[0]

    @property
    def closed(self) -> bool:
        return self._closed

    def _check_open(self) -> None:
        if self._closed:
            raise StateStoreError(f"task {self.task_id}: state manager is closed")


def _keeps_offsets(store: object) -> bool:
    """A store that keeps its changelog offsets itself (KIP-1035): the RocksDB stores."""
    return isinstance(store, RocksDBStore | RocksDBWindowStore)


def _run_all(calls: Iterable[Callable[[], None]]) -> None:
    """Run every call even if one fails, then raise the first error (Kafka's executeAll)."""
    first: BaseException | None = None
    for call in calls:
        try:
            call()
        except Exception as exc:
            if first is None:
                first = exc
    if first is not None:
        raise first

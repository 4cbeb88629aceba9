"""RocksDBStore: the persistent key-value store, on rocksdict in raw (bytes) mode.

Design choices and the rocksdict behaviours behind them:

* **Raw mode.** Keys and values are opaque bytes ordered by RocksDB's byte-wise comparator, so range scans
  mean the same as in Kafka Streams and other RocksDB tools can read the files. rocksdict's default mode
  would tag every value, pickle non-bytes objects and install a custom comparator.
* **No write-ahead log (at-least-once).** The changelog topic is the durable copy of the store; paying for
  a second log on every write buys nothing. The price: data only in the memtable is lost on a crash, so `flush()` (a
  memtable flush to SST files) must run before a checkpoint claims the data is on disk.
  `WriteOptions.disable_wal` is a property in rocksdict (the stub shows it as a method; calling it fails).
* **Bounded native calls.** rocksdict holds the GIL inside `get`/`put`/`write`/iteration, so nothing here
  does unbounded work in one call: scans read `iteration_chunk` entries per native iterator and drop the
  iterator before yielding; batches are as large as the caller makes them (restore chunks, cache flushes).
* **Offsets in the store (KIP-1035).** The changelog offsets live in the `offsets` column family
  (`streamlet.state.store_offsets`), written in the same WriteBatch as the data they cover (`commit`,
  `apply_changelog_records`). Atomic flush keeps RocksDB from persisting one column family's memtable
  without the other's; `flush()` flushes the data first, so a crash can leave data ahead of its offset
  (replayed again on restore, which converges) but never an offset ahead of its data.
* **Transactional mode (KIP-892, exactly-once).** Writes go to an `UncommittedWrites` overlay that reads
  see; `commit(offsets)` applies them with the offsets in one WriteBatch once the Kafka transaction has
  committed, `rollback()` or a crash drops them. RocksDB then only ever holds committed data, so the WAL
  is on: a batch that reached RocksDB survives a kill -9 and the store needs no flush per commit.
* **Handles never outlive a call.** RocksDB only releases its `LOCK` file when every derived object
  (iterators, snapshots, column family handles) is gone; a leaked iterator makes reopening or destroying
  the store fail with "lock hold by current process". Because each scan chunk opens and drops its own
  iterator, `close()` always really closes.
"""

from __future__ import annotations

import enum
import gc
import logging
import os
import shutil
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

from aiokafka.structs import TopicPartition
from rocksdict import AccessType, DbClosedError, Options, Rdict, ReadOptions, WriteBatch, WriteOptions

from streamlet.errors import StateStoreCorruptedError, StateStoreError, StateStoreLockedError
from streamlet.kafka.record_blocks import RecordBlock
from streamlet.state import rocksdb_memory
from streamlet.state.store import Entry, KeyValue, check_key, check_value, empty_range
from streamlet.state.store_offsets import OFFSETS_COLUMN_FAMILY_NAME, decode_offsets, offset_key, offset_value
from streamlet.state.uncommitted import UncommittedWrites

log = logging.getLogger(__name__)
_T = TypeVar("_T")

#: Subdirectory of a task dir that holds its RocksDB stores (Kafka Streams' `RocksDBStore.DB_FILE_DIR`).
DB_FILE_DIR = "rocksdb"

DEFAULT_ITERATION_CHUNK = 1_000


def _options() -> Options:
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    opts.create_missing_column_families(True)  # a store from before KIP-1035 gets its offsets column family
    opts.set_atomic_flush(True)  # the offsets never reach disk without the data they cover
    rocksdb_memory.apply(opts)  # block cache and memtables: Kafka Streams' defaults, or one bounded cache
    opts.set_keep_log_file_num(2)  # RocksDB's info LOG rolls on every open; don't pile up LOG.old.* files
    return opts


def _column_families() -> dict[str, Options]:
    return {OFFSETS_COLUMN_FAMILY_NAME: Options(raw_mode=True)}


#: An offsets value of None deletes the partition's entry (its offset is unknown).
Offsets = Mapping[TopicPartition, int | None]


class RocksDBStore:
    """A persistent `KeyValueStore` in its own RocksDB database at `path` (`<task_dir>/rocksdb/<name>`)."""

    def __init__(
        self,
        name: str,
        path: str | os.PathLike[str],
        *,
        iteration_chunk: int = DEFAULT_ITERATION_CHUNK,
        transactional: bool = False,
    ):
        if iteration_chunk < 1:
            raise ValueError("iteration_chunk must be >= 1")
        self._name = name
        self.path = Path(path)
        self._iteration_chunk = iteration_chunk
        self._write_opts = WriteOptions()
        # transactional: only committed batches reach RocksDB, and the WAL keeps them over a kill -9
        self._write_opts.disable_wal = not transactional  # type: ignore[method-assign,assignment]  # stub is wrong
        self._write_opts.sync = False
        self._uncommitted = UncommittedWrites() if transactional else None
        self._db: Rdict | None = None
        self._offsets_db: Rdict | None = None  # the offsets column family's view of the database
        self._offsets_cf: Any = None  # its handle, for WriteBatch entries
        self._open()

    def __repr__(self) -> str:
        return f"RocksDBStore({self._name!r}, {str(self.path)!r})"

    # ------------------------------------------------------------------ lifecycle

    def _open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = _retry_after_gc(lambda: Rdict(str(self.path), _options(), column_families=_column_families()))
        except Exception as exc:  # rocksdict raises plain Exception for RocksDB status errors
            status = rocksdb_status(exc)
            where = f"RocksDB store {self._name!r} at {self.path}"
            if status in (RocksDBStatus.LOCKED_IN_PROCESS, RocksDBStatus.LOCKED):
                raise StateStoreLockedError(
                    f"{where} is locked by another store instance or process ({exc}); retry once it is closed"
                ) from exc
            if status is RocksDBStatus.CORRUPTED:
                raise StateStoreCorruptedError(
                    f"{where} is unreadable ({exc}); wipe its directory and it is restored from its changelog"
                ) from exc
            raise StateStoreError(f"cannot open {where}: {exc}") from exc
        self._db.set_write_options(self._write_opts)
        self._offsets_db = self._db.get_column_family(OFFSETS_COLUMN_FAMILY_NAME)
        self._offsets_cf = self._db.get_column_family_handle(OFFSETS_COLUMN_FAMILY_NAME)

    @property
    def name(self) -> str:
        return self._name

    @property
    def transactional(self) -> bool:
        """True under exactly-once: writes wait in an uncommitted buffer until `commit`."""
        return self._uncommitted is not None

    @property
    def persistent(self) -> bool:
        return True

    @property
    def is_open(self) -> bool:
        return self._db is not None

    def _handle(self) -> Rdict:
        if self._db is None:
            raise StateStoreError(f"RocksDB store {self._name!r} at {self.path} is closed")
        return self._db

    def flush(self) -> None:
        """Flush memtables to SST files and wait: with the WAL off, this is what makes writes durable.

        The data first, then the offsets: a crash in between leaves data ahead of its offset, never behind it.
        Uncommitted writes of a transactional store stay where they are. rocksdict releases the GIL during
        the flush, so running it in an executor frees the event loop.
        """
        try:
            self._handle().flush(wait=True)
            if self._offsets_db is not None:
                self._offsets_db.flush(wait=True)
        except DbClosedError as exc:
            raise StateStoreError(f"RocksDB store {self._name!r} is closed") from exc
        except StateStoreError:
            raise
        except Exception as exc:
            raise StateStoreError(f"flushing RocksDB store {self._name!r} at {self.path} failed: {exc}") from exc

    def close(self) -> None:
        """Close the database and release its LOCK. Idempotent.

        rocksdict's close also flushes memtables, but callers that need durability must not rely on it
        (an unclean shutdown never gets here): call `flush()` before checkpointing.
        """
        db, self._db = self._db, None
        if self._uncommitted is not None:
            self._uncommitted.clear()  # never committed: gone, as after a crash
        if db is None:
            return
        self._offsets_db = self._offsets_cf = None  # column family handles pin the database (and its LOCK)
        try:
            db.close()
        except DbClosedError:
            pass

    def destroy(self) -> None:
        """Close and delete the database files: the store's state is gone (restore from the changelog)."""
        self.close()
        if self.path.exists():
            try:
                _retry_after_gc(lambda: Rdict.destroy(str(self.path), Options(raw_mode=True)))
            except Exception as exc:
                log.warning("RocksDB destroy of %s failed (%s); deleting the directory", self.path, exc)
            shutil.rmtree(self.path, ignore_errors=True)
            if self.path.exists():
                raise StateStoreError(f"cannot delete RocksDB store directory {self.path}")

    def wipe(self) -> None:
        """Destroy and reopen empty, keeping this object (wrapping layers hold a reference to it)."""
        self.destroy()
        self._open()

    # ------------------------------------------------------------------ changelog offsets (KIP-1035)

    def committed_offsets(self) -> dict[TopicPartition, int]:
        """The changelog offsets kept in the store: the last changelog record its committed data reflects."""
        if self._offsets_db is None:
            raise StateStoreError(f"RocksDB store {self._name!r} at {self.path} is closed")
        entries = list(self._offsets_db.items())  # no native iterator left in a traceback if decoding fails
        return decode_offsets(entries, f"RocksDB store {self._name!r} at {self.path}")

    def commit(self, offsets: Offsets) -> None:
        """Write the uncommitted writes (transactional) and `offsets` as one WriteBatch, then forget the writes.

        Called after the Kafka transaction that carried the writes' changelog records committed (exactly-once),
        or at a checkpoint (at-least-once, where there are no uncommitted writes and the caller flushes).
        """
        batch = WriteBatch(raw_mode=True)
        pending = self._uncommitted
        if pending is not None:
            for lo, hi in pending.range_deletions():
                batch.delete_range(lo, hi)
            for key, value in pending.entries():
                if value is None:
                    batch.delete(key)
                else:
                    batch.put(key, value)
        self._add_offsets(batch, offsets)
        if len(batch):
            self._handle().write(batch, self._write_opts)
        if pending is not None:
            pending.clear()

    def rollback(self) -> None:
        """Drop the uncommitted writes (the transaction aborted)."""
        if self._uncommitted is not None:
            self._uncommitted.clear()

    def approximate_num_uncommitted_bytes(self) -> int:
        """Kafka's `approximateNumUncommittedBytes`: 0 unless transactional."""
        return 0 if self._uncommitted is None else self._uncommitted.approximate_bytes

    def _add_offsets(self, batch: WriteBatch, offsets: Offsets) -> None:
        cf = self._offsets_cf
        if offsets and cf is None:
            raise StateStoreError(f"RocksDB store {self._name!r} at {self.path} is closed")
        for tp, offset in offsets.items():
            if offset is None:
                batch.delete(offset_key(tp), cf)
            else:
                batch.put(offset_key(tp), offset_value(offset), cf)

    # ------------------------------------------------------------------ reads and writes

    def get(self, key: bytes) -> bytes | None:
        check_key(key)
        if self._uncommitted is not None:
            found, value = self._uncommitted.lookup(key)
            if found:
                return value
        committed: bytes | None = self._handle().get(key)
        return committed

    def get_committed(self, key: bytes) -> bytes | None:
        """The committed value, ignoring uncommitted writes (interactive queries under exactly-once)."""
        value: bytes | None = self._handle().get(check_key(key))
        return value

    def put(self, key: bytes, value: bytes | None) -> None:
        check_key(key)
        check_value(value)
        if self._uncommitted is not None:
            self._handle()
            self._uncommitted.put(key, value)
            return
        db = self._handle()
        if value is None:
            db.delete(key, self._write_opts)
        else:
            db.put(key, value, self._write_opts)

    def delete(self, key: bytes) -> bytes | None:
        old = self.get(key)
        if old is not None:
            self.put(key, None)
        return old

    def put_all(self, entries: Iterable[Entry]) -> None:
        """Apply all entries (value None = delete) atomically, as one RocksDB WriteBatch (or to the uncommitted
        writes, which commit as one)."""
        if self._uncommitted is not None:
            checked = [(check_key(key), check_value(value)) for key, value in entries]
            self._handle()
            for key, value in checked:
                self._uncommitted.put(key, value)
            return
        batch = WriteBatch(raw_mode=True)
        for key, value in entries:
            check_key(key)
            if check_value(value) is None:
                batch.delete(key)
            else:
                batch.put(key, value)
        if len(batch):
            # rocksdict consumes the batch on write; a new one is built per call.
            self._handle().write(batch, self._write_opts)

    write_batch = put_all

    def delete_range(self, from_key: bytes, to_key: bytes) -> None:
        """Delete every key in `[from_key, to_key)` (one RocksDB range tombstone, whatever the count)."""
        check_key(from_key)
        check_key(to_key)
        if self._uncommitted is not None:
            self._handle()
            self._uncommitted.delete_range(from_key, to_key)
            return
        self._handle().delete_range(from_key, to_key, self._write_opts)

    def apply_changelog_records(
        self, records: Iterable[Any], *, timestamped: bool = False, offsets: Offsets | None = None
    ) -> None:
        """One WriteBatch from consumed changelog records (`.key`, `.value`; value None = delete) and `offsets`.

        The restore path: the restore consumer hands out a `RecordBlock` (columns, no record objects), and
        Kafka only ever hands out bytes or None, so the per-entry type checks of `put_all` are skipped; a
        record without a key cannot come from a store and is ignored. A `timestamped` store keeps each value
        behind its record's timestamp (`streamlet.state.timestamped`). Restored records are committed data
        (read_committed under exactly-once), so they bypass the uncommitted writes, and the offset of the
        chunk's last record goes into the same batch: a crash mid-restore resumes where it stopped.
        """
        block = records if isinstance(records, RecordBlock) else RecordBlock.from_records(records)
        values = block.timestamped_values() if timestamped else block.values
        batch = WriteBatch(raw_mode=True)
        put, delete = batch.put, batch.delete
        for key, value in zip(block.keys, values, strict=True):
            if key is None:
                continue
            if value is None:
                delete(key)
            else:
                put(key, value)
        self._add_offsets(batch, offsets or {})
        if len(batch):
            self._handle().write(batch, self._write_opts)

    def range(self, from_key: bytes | None, to_key: bytes | None) -> Iterator[KeyValue]:
        if from_key is not None:
            check_key(from_key)
        if to_key is not None:
            check_key(to_key)
        self._handle()  # fail now, not at the first next(), if the store is closed
        if empty_range(from_key, to_key):
            return iter(())
        if self._uncommitted is not None and len(self._uncommitted):
            return self._uncommitted.merged(self._scan(from_key, to_key), from_key, to_key)
        return self._scan(from_key, to_key)

    def all(self) -> Iterator[KeyValue]:
        return self.range(None, None)

    def range_committed(self, from_key: bytes | None, to_key: bytes | None) -> Iterator[KeyValue]:
        """`range` over the committed data only (interactive queries under exactly-once)."""
        self._handle()
        if empty_range(from_key, to_key):
            return iter(())
        return self._scan(from_key, to_key)

    def _scan(self, from_key: bytes | None, to_key: bytes | None) -> Iterator[KeyValue]:
        # The smallest key greater than to_key in byte-wise order is to_key + b"\x00": an exclusive upper
        # bound there makes the scan inclusive of to_key.
        upper = None if to_key is None else to_key + b"\x00"
        start = from_key
        chunk_size = self._iteration_chunk
        while True:
            chunk = self._read_chunk(start, upper, chunk_size)
            yield from chunk
            if len(chunk) < chunk_size:
                return
            start = chunk[-1][0] + b"\x00"

    def _read_chunk(self, start: bytes | None, upper: bytes | None, limit: int) -> list[KeyValue]:
        if self._db is None:
            raise StateStoreError(f"RocksDB store {self._name!r} was closed during iteration")
        read_opts = ReadOptions()
        if upper is not None:
            read_opts.set_iterate_upper_bound(upper)
        it = self._db.iter(read_opts)
        try:
            if start is None:
                it.seek_to_first()
            else:
                it.seek(start)
            chunk: list[KeyValue] = []
            while it.valid() and len(chunk) < limit:
                chunk.append((it.key(), it.value()))
                it.next()
            return chunk
        finally:
            del it  # release the native iterator (and its pin on the DB) before returning

    def is_empty(self) -> bool:
        """No committed data (one seek)."""
        self._handle()
        return not self._read_chunk(None, None, 1)

    def approximate_num_entries(self) -> int:
        value = self._handle().property_int_value("rocksdb.estimate-num-keys")
        return int(value or 0)


def read_store_offsets(path: Path) -> dict[TopicPartition, int]:
    """The changelog offsets a store directory keeps, opened read-only (no lock, nothing written); {} for a
    store without an offsets column family (from before KIP-1035) or one that cannot be read."""
    if not (path / "CURRENT").exists():  # no database (yet)
        return {}
    try:
        if OFFSETS_COLUMN_FAMILY_NAME not in Rdict.list_cf(str(path), Options(raw_mode=True)):
            return {}
        db = Rdict(
            str(path),
            Options(raw_mode=True),
            column_families=_column_families(),
            access_type=AccessType.read_only(),
        )
    except Exception as exc:
        log.warning("cannot read the changelog offsets of RocksDB store %s: %s", path, exc)
        return {}
    try:
        cf = db.get_column_family(OFFSETS_COLUMN_FAMILY_NAME)
        entries = list(cf.items())
        del cf
        return decode_offsets(entries, f"RocksDB store at {path}")
    except StateStoreCorruptedError as exc:
        log.warning("ignoring the changelog offsets of RocksDB store %s: %s", path, exc)
        return {}
    finally:
        db.close()


def read_task_store_offsets(rocksdb_dir: Path) -> dict[TopicPartition, int]:
    """Every changelog offset kept by the RocksDB stores under `<task_dir>/rocksdb` (`read_store_offsets`)."""
    offsets: dict[TopicPartition, int] = {}
    try:
        stores = sorted(p for p in rocksdb_dir.iterdir() if p.is_dir())
    except (FileNotFoundError, NotADirectoryError):
        return offsets
    for store in stores:
        offsets.update(read_store_offsets(store))
    return offsets


def _retry_after_gc(call: Callable[[], _T]) -> _T:
    """Run `call`; if RocksDB says this process still holds the LOCK, collect garbage and retry once.

    The native DB is only released when its last Python reference is gone. Our own iterators never
    outlive a call, but a reference cycle (e.g. a traceback frame that saw the old handle) can keep it alive
    until the cyclic collector runs; collecting only on this error keeps `close()` cheap.
    """
    try:
        return call()
    except Exception as exc:
        if rocksdb_status(exc) is not RocksDBStatus.LOCKED_IN_PROCESS:
            raise
        gc.collect()
        return call()


class RocksDBStatus(enum.Enum):
    """What went wrong, as far as the callers of RocksDB need to know."""

    LOCKED_IN_PROCESS = "locked by a store instance of this process"
    LOCKED = "locked by another process"
    CORRUPTED = "corrupt or missing files"
    OTHER = "other"


# RocksDB `Status::ToString()` prefixes: the status code and subcode ("IO error: No such file or directory"),
# then, for a lock, the message of the `LockFile` call that failed.
_STATUS_PREFIXES = (
    ("IO error: lock hold by current process", RocksDBStatus.LOCKED_IN_PROCESS),
    ("IO error: While lock file:", RocksDBStatus.LOCKED),
    ("Corruption:", RocksDBStatus.CORRUPTED),
    ("IO error: No such file or directory", RocksDBStatus.CORRUPTED),
)


def rocksdb_status(exc: BaseException) -> RocksDBStatus:
    """Classify an exception rocksdict raised by the RocksDB status at the start of its message.

    rocksdict turns every RocksDB error into a plain `Exception` whose message is `Status::ToString()`: no
    type, code or subcode survives except as the message's prefix ("Corruption: ...", "IO error: ...").
    Only that prefix is read, never words further in: a corruption message can name a "block" or a path
    that contains "lock". The lock prefixes are the two messages of RocksDB's POSIX `LockFile`: the LOCK is
    held by this process (an instance not yet released) or by another one (flock failed).
    """
    message = str(exc)
    for prefix, status in _STATUS_PREFIXES:
        if message.startswith(prefix):
            return status
    return RocksDBStatus.OTHER

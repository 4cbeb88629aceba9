"""RocksDBStore: the persistent key-value store, on rocksdict in raw (bytes) mode.

Design choices and the rocksdict behaviours behind them:

* **Raw mode.** Keys and values are opaque bytes ordered by RocksDB's byte-wise comparator, so range scans
  mean the same as in Kafka Streams and other RocksDB tools can read the files. rocksdict's default mode
  would tag every value, pickle non-bytes objects and install a custom comparator.
* **No write-ahead log.** The changelog topic is the durable copy of the store; paying for a second log on
  every write buys nothing. The price: data only in the memtable is lost on a crash, so `flush()` (a
  memtable flush to SST files) must run before a checkpoint claims the data is on disk.
  `WriteOptions.disable_wal` is a property in rocksdict (the stub shows it as a method; calling it fails).
* **Bounded native calls.** rocksdict holds the GIL inside `get`/`put`/`write`/iteration, so nothing here
  does unbounded work in one call: scans read `iteration_chunk` entries per native iterator and drop the
  iterator before yielding; batches are as large as the caller makes them (restore chunks, cache flushes).
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
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

from rocksdict import DbClosedError, Options, Rdict, ReadOptions, WriteBatch, WriteOptions

from streamlet.errors import StateStoreCorruptedError, StateStoreError, StateStoreLockedError
from streamlet.kafka.record_blocks import RecordBlock
from streamlet.state import rocksdb_memory
from streamlet.state.store import Entry, KeyValue, check_key, check_value, empty_range

log = logging.getLogger(__name__)
_T = TypeVar("_T")

#: Subdirectory of a task dir that holds its RocksDB stores (Kafka Streams' `RocksDBStore.DB_FILE_DIR`).
DB_FILE_DIR = "rocksdb"

DEFAULT_ITERATION_CHUNK = 1_000


def _options() -> Options:
    opts = Options(raw_mode=True)
    opts.create_if_missing(True)
    rocksdb_memory.apply(opts)  # block cache and memtables: Kafka Streams' defaults, or one bounded cache
    opts.set_keep_log_file_num(2)  # RocksDB's info LOG rolls on every open; don't pile up LOG.old.* files
    return opts


class RocksDBStore:
    """A persistent `KeyValueStore` in its own RocksDB database at `path` (`<task_dir>/rocksdb/<name>`)."""

    def __init__(self, name: str, path: str | os.PathLike[str], *, iteration_chunk: int = DEFAULT_ITERATION_CHUNK):
        if iteration_chunk < 1:
            raise ValueError("iteration_chunk must be >= 1")
        self._name = name
        self.path = Path(path)
        self._iteration_chunk = iteration_chunk
        self._write_opts = WriteOptions()
        self._write_opts.disable_wal = True  # type: ignore[method-assign,assignment]  # rocksdict's stub is wrong
        self._write_opts.sync = False
        self._db: Rdict | None = None
        self._open()

    def __repr__(self) -> str:
        return f"RocksDBStore({self._name!r}, {str(self.path)!r})"

    # ------------------------------------------------------------------ lifecycle

    def _open(self) -> None:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = _retry_after_gc(lambda: Rdict(str(self.path), _options()))
        except Exception as exc:  # rocksdict raises plain Exception for RocksDB status errors
            status = rocksdb_status(exc)
            where = f"RocksDB store {self._name!r} at {self.path}"
            if status in (RocksDBStatus.LOCKED_IN_PROCESS, RocksDBStatus.LOCKED):
                raise StateStoreLockedError(
                    f"{where} is locked by another store instance or process ({exc}); retry once it is closed"
                ) from exc
            if status is RocksDBStatus.CORRUPTED:
                raise StateStoreCorruptedError(
                    f"{where} is unreadable ({exc}); wipe it (the directory and the task's .checkpoint) and it "
                    "is restored from its changelog"
                ) from exc
            raise StateStoreError(f"cannot open {where}: {exc}") from exc
        self._db.set_write_options(self._write_opts)

    @property
    def name(self) -> str:
        return self._name

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

        rocksdict releases the GIL during the flush, so running it in an executor frees the event loop.
        """
        try:
            self._handle().flush(wait=True)
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
        if db is None:
            return
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

    # ------------------------------------------------------------------ reads and writes

    def get(self, key: bytes) -> bytes | None:
        value: bytes | None = self._handle().get(check_key(key))
        return value

    def put(self, key: bytes, value: bytes | None) -> None:
        check_key(key)
        db = self._handle()
        if check_value(value) is None:
            db.delete(key, self._write_opts)
        else:
            db.put(key, value, self._write_opts)

    def delete(self, key: bytes) -> bytes | None:
        db = self._handle()
        old: bytes | None = db.get(check_key(key))
        if old is not None:
            db.delete(key, self._write_opts)
        return old

    def put_all(self, entries: Iterable[Entry]) -> None:
        """Apply all entries (value None = delete) atomically, as one RocksDB WriteBatch."""
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
        self._handle().delete_range(check_key(from_key), check_key(to_key), self._write_opts)

    def apply_changelog_records(self, records: Iterable[Any], *, timestamped: bool = False) -> None:
        """One WriteBatch from consumed changelog records (`.key`, `.value`; value None = delete).

        The restore path: the restore consumer hands out a `RecordBlock` (columns, no record objects), and
        Kafka only ever hands out bytes or None, so the per-entry type checks of `put_all` are skipped; a
        record without a key cannot come from a store and is ignored. A `timestamped` store keeps each value
        behind its record's timestamp (`streamlet.state.timestamped`).
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
        return self._scan(from_key, to_key)

    def all(self) -> Iterator[KeyValue]:
        return self.range(None, None)

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

    def approximate_num_entries(self) -> int:
        value = self._handle().property_int_value("rocksdb.estimate-num-keys")
        return int(value or 0)


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

"""RocksDBWindowStore: a window store on RocksDB, segmented by time like Kafka Streams' segmented stores.

Keys are `WindowKeySchema` store keys (record key + 8-byte window start + 4-byte seqnum), so the store speaks
the `KeyValueStore` protocol and the usual caching and change-logging layers wrap it unchanged: the changelog
gets Kafka's windowed key format and restoration writes it back through `put_all`.

Why segments: windows expire. Kafka Streams keeps one RocksDB per segment (`segment_interval_ms` of window
starts) and drops whole segments once they fall behind stream time by more than the retention. Here the
segments share one RocksDB: each key is stored under an 8-byte big-endian segment-id prefix, so dropping the
expired segments is one range delete, and within a segment keys sort as in Kafka's segments. The rules are
Kafka's (`AbstractRocksDBSegmentedBytesStore`, `AbstractSegments`):

* stream time is the largest window start ever written (restores included);
* a write to a segment older than `segment_id(stream_time - retention)` is dropped (counted in
  `expired_writes`), and every write drops the segments before that one;
* a read of a window starting before `stream_time - retention + 1` finds nothing.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Callable, Iterable, Iterator

from aiokafka.structs import TopicPartition

from streamlet.state import window_key_schema as schema
from streamlet.state.rocksdb_store import Offsets, RocksDBStore
from streamlet.state.store import Entry, KeyValue, check_key, check_value

_SEGMENT = struct.Struct(">q")
NO_TIMESTAMP = -1
#: Kafka's default segment interval for DSL window stores is max(retention / 2, 60 s).
MIN_SEGMENT_INTERVAL_MS = 60_000


def default_segment_interval(retention_ms: int) -> int:
    return max(retention_ms // 2, MIN_SEGMENT_INTERVAL_MS)


class RocksDBWindowStore:
    """A persistent window store keyed by `WindowKeySchema` store keys (see the module docstring)."""

    def __init__(
        self,
        name: str,
        path: str | os.PathLike[str],
        *,
        retention_ms: int,
        segment_interval_ms: int | None = None,
        retain_duplicates: bool = False,
        transactional: bool = False,
    ) -> None:
        self._db = RocksDBStore(name, path, transactional=transactional)
        self.retention_ms = retention_ms
        # a stream-stream join's store: every key is new (a sequence number in it), so a put of None deletes
        # nothing and is skipped, leaving stream time alone (Kafka's RocksDBWindowStore#put)
        self.retain_duplicates = retain_duplicates
        self.segment_interval_ms = segment_interval_ms or default_segment_interval(retention_ms)
        self.observed_stream_time = NO_TIMESTAMP
        self.expired_writes = 0
        self._segments = self._existing_segments()  # ids of the segments that may hold keys
        self._min_segment = min(self._segments, default=0)  # every segment before this one has been dropped

    def _existing_segments(self) -> set[int]:
        """The segment ids on disk: one seek per segment (stores hold a few live segments)."""
        found: set[int] = set()
        lower: bytes | None = None
        while (first := next(self._db.range(lower, None), None)) is not None:
            (segment,) = _SEGMENT.unpack_from(first[0])
            found.add(segment)
            lower = _SEGMENT.pack(segment + 1)
        return found

    @property
    def name(self) -> str:
        return self._db.name

    @property
    def persistent(self) -> bool:
        return True

    def segment_id(self, timestamp: int) -> int:
        """`timestamp / segment_interval` with Java's division (towards zero, also for negative times)."""
        quotient = abs(timestamp) // self.segment_interval_ms
        return quotient if timestamp >= 0 else -quotient

    def segment_timestamp(self, store_key: bytes) -> int:
        """The time a key is segmented and expired by (Kafka's `KeySchema.segmentTimestamp`): the window start."""
        return schema.window_start_of(store_key)

    def _local(self, store_key: bytes) -> bytes:
        return _SEGMENT.pack(self.segment_id(self.segment_timestamp(store_key))) + store_key

    # ------------------------------------------------------------------ reads

    def get(self, key: bytes) -> bytes | None:
        return self._get(self._db.get, key)

    def get_committed(self, key: bytes) -> bytes | None:
        """`get` ignoring uncommitted writes (interactive queries under exactly-once)."""
        return self._get(self._db.get_committed, key)

    def _get(self, read: Callable[[bytes], bytes | None], key: bytes) -> bytes | None:
        check_key(key)
        if self.segment_timestamp(key) < self.observed_stream_time - self.retention_ms + 1:
            return None  # expired, even if its segment is not dropped yet
        return read(self._local(key))

    def range(self, from_key: bytes | None, to_key: bytes | None) -> Iterator[KeyValue]:
        """Live entries whose store key is in `[from_key, to_key]`, in store-key order.

        Kafka's segmented store iterates segment by segment; the caching layer above merges by key order, so
        this scans `[from_key, to_key]` in each segment (one seek each) and sorts what it found.
        """
        return self._range(self._db.range, from_key, to_key)

    def range_committed(self, from_key: bytes | None, to_key: bytes | None) -> Iterator[KeyValue]:
        """`range` ignoring uncommitted writes (interactive queries under exactly-once)."""
        return self._range(self._db.range_committed, from_key, to_key)

    def _range(
        self,
        scan: Callable[[bytes | None, bytes | None], Iterator[KeyValue]],
        from_key: bytes | None,
        to_key: bytes | None,
    ) -> Iterator[KeyValue]:
        first_live = self.observed_stream_time - self.retention_ms + 1
        entries = []
        for segment in sorted(self._segments):
            prefix = _SEGMENT.pack(segment)
            lower = prefix if from_key is None else prefix + from_key
            upper = _SEGMENT.pack(segment + 1) if to_key is None else prefix + to_key
            for local, value in scan(lower, upper):
                key = local[_SEGMENT.size :]
                if local.startswith(prefix) and self.segment_timestamp(key) >= first_live:
                    entries.append((key, value))
        entries.sort(key=lambda entry: entry[0])
        return iter(entries)

    def all(self) -> Iterator[KeyValue]:
        return self.range(None, None)

    def approximate_num_entries(self) -> int:
        return self._db.approximate_num_entries()

    # ------------------------------------------------------------------ writes

    def put(self, key: bytes, value: bytes | None) -> None:
        if value is None and self.retain_duplicates:
            return
        self.put_all([(key, value)])

    def put_all(self, entries: Iterable[Entry]) -> None:
        """One write batch of the live entries; each entry advances stream time first, as in Kafka."""
        batch: list[Entry] = []
        for key, value in entries:
            check_key(key)
            check_value(value)
            timestamp = self.segment_timestamp(key)
            self.observed_stream_time = max(self.observed_stream_time, timestamp)
            if self.is_expired(timestamp):
                self.expired_writes += 1
                continue
            local = self._local(key)
            self._segments.add(_SEGMENT.unpack_from(local)[0])
            batch.append((local, value))
        self._db.put_all(batch)
        self._drop_expired_segments()

    def delete(self, key: bytes) -> bytes | None:
        old = self.get(key)
        self.put(key, None)
        return old

    def is_expired(self, timestamp: int) -> bool:
        """Whether a write at `timestamp` now falls in a dropped segment, and is itself dropped."""
        return self.segment_id(timestamp) < self._min_live_segment()

    def live_from(self) -> int:
        """The first timestamp a write may have now: the start of the oldest live segment."""
        return self._min_live_segment() * self.segment_interval_ms

    def _min_live_segment(self) -> int:
        return self.segment_id(self.observed_stream_time - self.retention_ms)

    def _drop_expired_segments(self) -> None:
        live = self._min_live_segment()
        if live > self._min_segment:
            self._db.delete_range(_SEGMENT.pack(self._min_segment), _SEGMENT.pack(live))
            self._min_segment = live
            self._segments = {segment for segment in self._segments if segment >= live}

    # ------------------------------------------------------------------ changelog offsets and transactions

    @property
    def transactional(self) -> bool:
        return self._db.transactional

    def committed_offsets(self) -> dict[TopicPartition, int]:
        return self._db.committed_offsets()

    def commit(self, offsets: Offsets) -> None:
        self._db.commit(offsets)

    def rollback(self) -> None:
        self._db.rollback()

    def approximate_num_uncommitted_bytes(self) -> int:
        return self._db.approximate_num_uncommitted_bytes()

    def is_empty(self) -> bool:
        return self._db.is_empty()

    # ------------------------------------------------------------------ lifecycle

    def flush(self) -> None:
        self._db.flush()

    def close(self) -> None:
        self._db.close()

    def wipe(self) -> None:
        self._db.wipe()
        self.observed_stream_time = NO_TIMESTAMP
        self._segments = set()
        self._min_segment = 0

"""The suppression buffer: an in-memory, time-ordered, change-logged key-value buffer.

Kafka Streams' `InMemoryTimeOrderedKeyValueChangeBuffer`, byte for byte where it shows: each serialized key
holds one `BufferValue` (the prior value, the old and new value of the latest table update, and the record
context of that update), ordered by its *buffer time* (for emit-final the window end, else the record
timestamp of the key's first buffered update: a later update of a buffered key keeps its place). Suppress
evicts from the oldest buffer time on.

It lives in memory only. Every key touched since the last flush is logged at flush (commit) time to the
store's changelog in Kafka's version-3 format (header `v` = 3; value = record context, prior, old and new
value, then the 8-byte buffer time; a tombstone once the key was evicted), records without a timestamp as
Kafka sends them, so a crashed task rebuilds the buffer from its changelog (`apply_changelog_records`) and
its windows' final results are neither lost nor emitted twice. The same changelog is readable by Kafka
Streams, and the buffer reads what Kafka Streams wrote (version 3; older versions are refused).

Sizes (`buffer_size`, what `BufferConfig.max_bytes` bounds) follow Kafka's estimate: 8 bytes of buffer
time, the key, the values (an old value equal to the prior one counted once) and the record context.
"""

from __future__ import annotations

import heapq
import struct
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from streamlet.errors import StateStoreError

__all__ = ["BufferValue", "BufferedContext", "ChangelogSink", "TimeOrderedKeyValueBuffer"]

#: Kafka's changelog header of the current buffer format, on every non-tombstone record.
CHANGELOG_HEADERS: tuple[tuple[str, bytes], ...] = (("v", b"\x03"),)
_NULL = -1
_OLD_IS_PRIOR = -2
_INT = struct.Struct(">i")
_LONG = struct.Struct(">q")
_CONTEXT_HEAD = struct.Struct(">qqi")  # timestamp, offset, topic length

#: `sink(key, value)`: write one changelog record (value None = tombstone) to the buffer's changelog partition.
ChangelogSink = Callable[[bytes, bytes | None], None]


@dataclass(frozen=True, slots=True)
class BufferedContext:
    """The record context of a buffered update (Kafka's ProcessorRecordContext): emitted with it later."""

    timestamp: int
    offset: int
    topic: str | None
    partition: int
    headers: tuple[tuple[str, bytes | None], ...] = ()

    def serialize(self) -> bytes:
        if self.topic is None:
            raise StateStoreError("a suppression buffer cannot log an update without a source topic (a punctuation)")
        topic = self.topic.encode()
        parts = [_CONTEXT_HEAD.pack(self.timestamp, self.offset, len(topic)), topic]
        parts.append(_INT.pack(self.partition) + _INT.pack(len(self.headers)))
        for key, value in self.headers:
            raw_key = key.encode()
            parts.append(_INT.pack(len(raw_key)) + raw_key)
            parts.append(_INT.pack(_NULL) if value is None else _INT.pack(len(value)) + value)
        return b"".join(parts)

    def size_estimate(self) -> int:
        """Kafka's `residentMemorySizeEstimate` (topic and header keys in Java chars)."""
        size = 8 + 8 + (0 if self.topic is None else len(self.topic)) + 4
        for key, value in self.headers:
            size += len(key) + (0 if value is None else len(value))
        return size


@dataclass(frozen=True, slots=True)
class BufferValue:
    """One buffered key: the value before the first buffered update (`prior`), and the latest update."""

    prior: bytes | None
    old: bytes | None
    new: bytes | None
    context: BufferedContext

    def serialize(self) -> bytes:
        parts = [self.context.serialize(), _nullable(self.prior)]
        if self.old is None:
            parts.append(_INT.pack(_NULL))
        elif self.old == self.prior:
            parts.append(_INT.pack(_OLD_IS_PRIOR))
        else:
            parts.append(_INT.pack(len(self.old)) + self.old)
        parts.append(_nullable(self.new))
        return b"".join(parts)

    def size_estimate(self) -> int:
        old = 0 if self.old is None or self.old == self.prior else len(self.old)
        return _len(self.prior) + old + _len(self.new) + self.context.size_estimate()


def _len(value: bytes | None) -> int:
    return 0 if value is None else len(value)


def _nullable(value: bytes | None) -> bytes:
    return _INT.pack(_NULL) if value is None else _INT.pack(len(value)) + value


class _Reader:
    __slots__ = ("data", "pos")

    def __init__(self, data: bytes) -> None:
        self.data = data
        self.pos = 0

    def i32(self) -> int:
        (value,) = _INT.unpack_from(self.data, self.pos)
        self.pos += 4
        return int(value)

    def i64(self) -> int:
        (value,) = _LONG.unpack_from(self.data, self.pos)
        self.pos += 8
        return int(value)

    def raw(self, size: int) -> bytes:
        if size < 0 or self.pos + size > len(self.data):
            raise ValueError(f"truncated buffer changelog record ({size} bytes at {self.pos} of {len(self.data)})")
        value = self.data[self.pos : self.pos + size]
        self.pos += size
        return value

    def nullable(self, size: int | None = None) -> bytes | None:
        size = self.i32() if size is None else size
        return None if size == _NULL else self.raw(size)


def decode_changelog_value(data: bytes) -> tuple[int, BufferValue]:
    """A version-3 changelog value: (buffer time, BufferValue)."""
    reader = _Reader(data)
    timestamp, offset = reader.i64(), reader.i64()
    topic = reader.raw(reader.i32()).decode()
    partition = reader.i32()
    headers = []
    for _ in range(reader.i32()):
        key = reader.raw(reader.i32()).decode()
        headers.append((key, reader.nullable()))
    context = BufferedContext(timestamp, offset, topic, partition, tuple(headers))
    prior = reader.nullable()
    old_size = reader.i32()
    old = prior if old_size == _OLD_IS_PRIOR else reader.nullable(old_size)
    new = reader.nullable()
    time = reader.i64()
    if reader.pos != len(data):
        raise ValueError(f"{len(data) - reader.pos} unexpected trailing bytes in a buffer changelog record")
    return time, BufferValue(prior, old, new, context)


def encode_changelog_value(time: int, value: BufferValue) -> bytes:
    return value.serialize() + _LONG.pack(time)


class TimeOrderedKeyValueBuffer:
    """The buffer of one suppress processor in one task (see the module docstring).

    `sink` logs to the changelog (None: a standby's copy, or an unlogged buffer). Keys and values are bytes:
    the processor serializes with the table's serdes, as Kafka's buffer does, so the changelog holds what
    Kafka Streams' would.
    """

    persistent = False

    def __init__(self, name: str, sink: ChangelogSink | None = None) -> None:
        self.name = name
        self._sink = sink
        self._index: dict[bytes, int] = {}  # key -> its buffer time
        self._values: dict[bytes, BufferValue] = {}
        self._heap: list[tuple[int, bytes]] = []  # (buffer time, key); entries no longer in _index are stale
        self._dirty: dict[bytes, None] = {}  # touched since the last flush, in order
        self._dirty_capacity = 16  # of Kafka's dirty-key HashSet, which a clear() does not shrink
        self._size = 0

    # ---- reads -----------------------------------------------------------------------------------------------

    @property
    def num_records(self) -> int:
        return len(self._index)

    @property
    def buffer_size(self) -> int:
        return self._size

    def prior_value_for_buffered(self, key: bytes) -> tuple[bool, bytes | None]:
        """Whether `key` is buffered, and if so its value before its first buffered update (Kafka's
        `priorValueForBuffered`: what the suppressed table last emitted for it, None if nothing)."""
        value = self._values.get(key)
        return (False, None) if value is None else (True, value.prior)

    @property
    def min_timestamp(self) -> int:
        """The smallest buffer time (Java's Long.MAX_VALUE when empty, as Kafka's)."""
        head = self._head()
        return (1 << 63) - 1 if head is None else head[0]

    # ---- writes ----------------------------------------------------------------------------------------------

    def put(self, time: int, key: bytes, new: bytes | None, old: bytes | None, context: BufferedContext) -> None:
        """Buffer the latest update of `key`; a key already buffered keeps its buffer time and prior value."""
        buffered = self._values.get(key)
        prior = old if buffered is None else buffered.prior
        self._clean_put(time, key, BufferValue(prior, old, new, context))
        self._mark_dirty(key)

    def evict_while(self, predicate: Callable[[], bool], emit: Callable[[bytes, BufferValue], None]) -> None:
        """Remove the oldest entries, calling `emit(key, value)` before each removal, while `predicate()`."""
        while predicate():
            head = self._head()
            if head is None:
                return
            key = head[1]
            value = self._values[key]
            emit(key, value)
            heapq.heappop(self._heap)
            self._remove(key)
            self._mark_dirty(key)

    def _mark_dirty(self, key: bytes) -> None:
        dirty = self._dirty
        if key not in dirty:
            dirty[key] = None
            if len(dirty) > self._dirty_capacity * 3 // 4:
                self._dirty_capacity *= 2

    def _head(self) -> tuple[int, bytes] | None:
        heap, index = self._heap, self._index
        while heap:
            time, key = heap[0]
            if index.get(key) == time:
                return heap[0]
            heapq.heappop(heap)  # stale: the key was removed (and maybe buffered again at another time)
        return None

    def _clean_put(self, time: int, key: bytes, value: BufferValue) -> None:
        previous = self._values.get(key)
        if previous is None:
            self._index[key] = time
            heapq.heappush(self._heap, (time, key))
        else:
            self._size -= _record_size(key, previous)
        self._values[key] = value
        self._size += _record_size(key, value)

    def _remove(self, key: bytes) -> None:
        del self._index[key]
        self._size -= _record_size(key, self._values.pop(key))

    # ---- changelog -------------------------------------------------------------------------------------------

    def flush_buffer(self) -> None:
        """Log every key touched since the last flush: its buffered value, or a tombstone if it was evicted."""
        if not self._dirty:
            return
        dirty, self._dirty = self._dirty, {}
        sink = self._sink
        if sink is None:
            return
        for key in _hash_set_order(dirty, self._dirty_capacity):
            value = self._values.get(key)
            sink(key, None if value is None else encode_changelog_value(self._index[key], value))

    def apply_changelog_records(self, records: Sequence[Any]) -> None:
        """Restore: replay changelog records (`.key`, `.value`, `.headers`) in offset order."""
        for record in records:
            key = record.key
            if key is None:
                continue
            if record.value is None:
                if key in self._values:
                    self._remove(key)
                continue
            version = _version(getattr(record, "headers", None) or ())
            if version != b"\x03":
                raise StateStoreError(
                    f"store {self.name}: changelog record at offset {record.offset} has buffer format version "
                    f"{version!r}; only version 3 (Kafka Streams 2.6+) can be restored"
                )
            time, value = decode_changelog_value(record.value)
            self._clean_put(time, key, value)

    # ---- store lifecycle (what the state manager calls) -----------------------------------------------------

    def flush(self) -> None:
        """Nothing to write to disk (the state manager logs the buffer with `flush_buffer` at commit)."""

    def wipe(self) -> None:
        self._index.clear()
        self._values.clear()
        self._heap.clear()
        self._dirty.clear()
        self._size = 0

    def close(self) -> None:
        self.wipe()

    def __repr__(self) -> str:
        return f"TimeOrderedKeyValueBuffer({self.name!r}, records={self.num_records}, bytes={self._size})"


def _bytes_hash(key: bytes) -> int:
    """Kafka's `Bytes.hashCode()` (Java's `Arrays.hashCode(byte[])`, signed bytes) as an unsigned 32-bit int."""
    h = 1
    for b in key:
        h = (31 * h + (b - 256 if b > 127 else b)) & 0xFFFFFFFF
    return h


def _hash_set_order(keys: Iterable[bytes], capacity: int) -> list[bytes]:
    """The order a Java `HashSet<Bytes>` of `capacity` buckets iterates `keys` (given in insertion order):
    Kafka logs a flush's dirty keys in that order, and the changelog must be the same record for record."""
    mask = capacity - 1

    def bucket(key: bytes) -> int:
        h = _bytes_hash(key)
        return (h ^ (h >> 16)) & mask

    return sorted(keys, key=bucket)  # stable: insertion order within a bucket, as Java's bins keep it


def _record_size(key: bytes, value: BufferValue) -> int:
    return 8 + len(key) + value.size_estimate()


def _version(headers: Iterable[tuple[str, bytes]]) -> bytes | None:
    version = None
    for name, value in headers:
        if name == "v":
            version = value  # Kafka reads the last header "v"
    return version


def changelog_sink(send: Callable[..., None], topic: str, partition: int) -> ChangelogSink:
    """A sink producing to the buffer's changelog partition: values with the version header, no timestamp."""

    def sink(key: bytes, value: bytes | None) -> None:
        send(topic, key, value, None, partition, headers=None if value is None else CHANGELOG_HEADERS)

    return sink

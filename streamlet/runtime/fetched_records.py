"""Fetched records without aiokafka's per-record objects and generator.

aiokafka decodes each fetched batch record (its C `DefaultRecord`), copies it into a new `ConsumerRecord` with
the topic, partition, sizes and a headers tuple, and hands the records one by one from a Python generator to
`getmany()`'s loop: in WordCount that was the largest single cost of the consumer side. A stream thread needs
none of it (the partition is the dict key of the fetch result), so its main consumer opts out: a consumer
whose key deserializer is `RAW_RECORDS` gets `BatchRecord`s (tuples with named fields), a whole batch of them
decoded at once by the native decoder (`streamlet._record_batch.decode_records`; aiokafka's decoder where it
cannot: compressed or legacy batches, or an install without the C extension) and taken by `getmany()` list
by list. aiokafka keeps deciding everything about a batch (CRC, aborted transactions, control batches,
`max_records`, the position). Every other consumer is untouched.

Only the error path needs a real `ConsumerRecord` (handlers, dead letters): `consumer_record` builds one.
The opt-out patches aiokafka's `PartitionRecords.__init__` and `FetchResult.getall` (pinned to aiokafka
0.14); if they are missing, nothing is patched and the consumer yields ordinary `ConsumerRecord`s, which
every user of `FetchedRecord` accepts as well.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol, TypeAlias, cast

from aiokafka.consumer import fetcher as _fetcher
from aiokafka.structs import ConsumerRecord, TopicPartition

from streamlet.kafka import record_blocks
from streamlet.kafka.aiokafka_internals import version_supported
from streamlet.kafka.native_modules import load_native

if TYPE_CHECKING:
    import streamlet._record_batch as _native
    from streamlet._record_batch import BatchRecord as NativeBatchRecord
else:  # None without a C compiler or with a stale build: aiokafka's decoder reads the batches
    _native = load_native("streamlet._record_batch", "record_batch.c")


class FetchedRecord(Protocol):
    """What the runtime reads of a fetched record (a `BatchRecord`, or a `ConsumerRecord` where not patched)."""

    @property
    def offset(self) -> int: ...

    @property
    def timestamp(self) -> int: ...

    @property
    def key(self) -> bytes | None: ...

    @property
    def value(self) -> bytes | None: ...

    @property
    def headers(self) -> Sequence[tuple[str, bytes]]: ...


class BatchRecord(NamedTuple):
    """A fetched record as the main consumer hands it over (`timestamp_type` 0: create time, 1: log append).

    The native decoder makes `streamlet._record_batch.BatchRecord`s instead: the same fields, as a C struct
    sequence, which is cheaper to make and to free than a NamedTuple."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp_type: int


#: what the main consumer hands over per record: the native decoder's struct sequence or the fallback's tuple
Fetched: TypeAlias = "BatchRecord | NativeBatchRecord"


def _identity(data: bytes | None) -> bytes | None:
    return data


#: pass as `key_deserializer` (the bytes stay as they are) to get decoded batch records from `getmany()`
RAW_RECORDS = _identity


def consumer_record(tp: TopicPartition, record: Any) -> ConsumerRecord[Any, Any]:
    """The `ConsumerRecord` aiokafka would have built (for handlers and dead letters: the error path only)."""
    if isinstance(record, ConsumerRecord):
        return record
    key, value = record.key, record.value
    return ConsumerRecord(
        tp.topic,
        tp.partition,
        record.offset,
        record.timestamp,
        record.timestamp_type,
        key,
        value,
        None,  # the checksum: v2 batches have none per record
        len(key) if key is not None else -1,
        len(value) if value is not None else -1,
        tuple(record.headers),
    )


def _record_lists(partition_records: Any) -> Iterator[tuple[int, list[Fetched]]]:
    """Per kept batch: the offset after it, and its records from the position on."""
    for batch, raw, start in record_blocks.kept_batches(partition_records):
        min_offset = partition_records.next_fetch_offset
        records: list[Fetched]
        if raw is not None and _native is not None:
            records = cast("list[Fetched]", _native.decode_records(raw, start, min_offset))  # list is invariant
        else:  # the same fields, in a NamedTuple
            records = [
                BatchRecord(r.offset, r.timestamp, r.key, r.value, tuple(r.headers), r.timestamp_type)
                for r in batch
                if r.offset >= min_offset
            ]
        yield batch.next_offset, records


class _Taker:
    """Takes a fetched partition's records batch by batch, up to `max_records`, moving its position as
    aiokafka's per-record generator does: past the last record taken, or past a batch taken whole."""

    __slots__ = ("_partition_records", "_batches", "_pending", "_batch_end")

    def __init__(self, partition_records: Any) -> None:
        self._partition_records = partition_records
        self._batches = _record_lists(partition_records)
        self._pending: list[Fetched] = []
        self._batch_end = 0

    def take(self, max_records: int | None) -> tuple[list[Fetched], bool]:
        """Up to `max_records` records (None: all), and whether the fetched records are exhausted."""
        owner = self._partition_records
        taken: list[Fetched] = []
        while True:
            pending = self._pending
            if pending:
                room = len(pending) if max_records is None else max_records - len(taken)
                if room < len(pending):
                    taken += pending[:room]
                    self._pending = pending[room:]
                    owner.next_fetch_offset = taken[-1].offset + 1
                    return taken, False
                if taken:
                    taken += pending
                else:
                    taken = pending
                self._pending = []
                owner.next_fetch_offset = self._batch_end
                if max_records is not None and len(taken) >= max_records:
                    return taken, False
            following = next(self._batches, None)
            if following is None:
                return taken, True
            self._batch_end, self._pending = following
            if not self._pending:
                owner.next_fetch_offset = self._batch_end

    def one_by_one(self) -> Iterator[Fetched]:
        """aiokafka's record iterator (`getone()`), for completeness: the runtime takes lists."""
        while True:
            records, exhausted = self.take(1)
            yield from records
            if exhausted:
                return


def _install() -> bool:
    if not version_supported() or not record_blocks.INSTALLED:
        return False
    records_class: Any = getattr(_fetcher, "PartitionRecords", None)
    result_class: Any = getattr(_fetcher, "FetchResult", None)
    original_init = getattr(records_class, "__init__", None)
    original_getall = getattr(result_class, "getall", None)
    if original_init is None or original_getall is None:
        return False
    if getattr(original_getall, "_streamlet_lists", False):
        return True

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        if self._key_deserializer is RAW_RECORDS:
            taker = _Taker(self)
            self._streamlet_take = taker.take
            self._records_iterator = taker.one_by_one()

    def getall(self: Any, max_records: int | None = None) -> list[Any]:
        take = getattr(self._partition_records, "_streamlet_take", None)
        if take is None:
            return original_getall(self, max_records)  # type: ignore[no-any-return]
        if not self.check_assignment(self._topic_partition) or not self.has_more():
            return []
        records, exhausted = take(max_records)
        self._update_position()
        if exhausted:
            self._partition_records = None
        return records

    getall._streamlet_lists = True  # type: ignore[attr-defined]
    records_class.__init__ = __init__
    result_class.getall = getall
    return True


#: False when this aiokafka cannot be patched (then records are ConsumerRecords)
INSTALLED = _install()

"""Fetched records without aiokafka's per-record `ConsumerRecord`.

aiokafka decodes each fetched batch record (its C `DefaultRecord`: offset, timestamp, key, value, headers) and
then copies it into a new `ConsumerRecord` with the topic, partition, sizes and a headers tuple: in WordCount
that copy was the largest single cost of the consumer side. A stream thread needs none of it (the partition
is the dict key of the fetch result), so its main consumer opts out: a consumer whose key deserializer is
`RAW_RECORDS` gets the decoded batch records themselves. Every other consumer is untouched.

Only the error path needs a real `ConsumerRecord` (handlers, dead letters): `consumer_record` builds one.
The opt-out patches one method of aiokafka's `PartitionRecords` (pinned to aiokafka 0.14); if that method
is missing, nothing is patched and the consumer yields ordinary `ConsumerRecord`s, which every user of
`FetchedRecord` accepts as well.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from aiokafka.consumer import fetcher as _fetcher
from aiokafka.structs import ConsumerRecord, TopicPartition

from streamlet.kafka.aiokafka_internals import version_supported


class FetchedRecord(Protocol):
    """What the runtime reads of a fetched record (a `ConsumerRecord` or aiokafka's decoded batch record)."""

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
        record.checksum,
        len(key) if key is not None else -1,
        len(value) if value is not None else -1,
        tuple(record.headers),
    )


def _install() -> bool:
    if not version_supported():
        return False
    records_class: Any = getattr(_fetcher, "PartitionRecords", None)
    original = getattr(records_class, "_consumer_record", None)
    if original is None or getattr(original, "_streamlet_raw", False):
        return original is not None

    def _consumer_record(self: Any, tp: TopicPartition, record: Any) -> Any:
        if self._key_deserializer is RAW_RECORDS:
            return record
        return original(self, tp, record)

    _consumer_record._streamlet_raw = True  # type: ignore[attr-defined]
    records_class._consumer_record = _consumer_record
    return True


#: False when this aiokafka has no `PartitionRecords._consumer_record` (then records are ConsumerRecords)
INSTALLED = _install()

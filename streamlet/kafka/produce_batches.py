"""Produce batches encoded natively: a partition's queued records become Kafka v2 batches in one C call each.

aiokafka's `BatchBuilder.append` is one keyword call per record into its builder; the record collector has a
partition's records as a list already. `NativeBatch` is what aiokafka's accumulator needs of a batch
(`send_batch` takes it in place of a `BatchBuilder`): its records are encoded up front
(`streamlet._record_encoder.encode_records`) and the header with the producer state and CRC is put in front
when the sender builds it (`_set_producer_state`, `_build`), as aiokafka's builder does. The bytes are the
builder's, bit for bit (tests/unit/kafka/test_produce_batches.py).

Only uncompressed batches: a producer with a compression type, or an install without the C extension
(`NATIVE` False), keeps aiokafka's builder.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from aiokafka import AIOKafkaProducer
from aiokafka.producer.message_accumulator import MessageAccumulator

from streamlet.kafka.aiokafka_internals import require, version_supported
from streamlet.kafka.native_modules import load_native

if TYPE_CHECKING:
    import streamlet._record_encoder as _native
else:  # None without a C compiler or with a stale build: the collector uses aiokafka's BatchBuilder
    _native = load_native("streamlet._record_encoder", "record_encoder.c")

#: a queued record of one partition: (key, value, timestamp or None, headers)
Queued = tuple[bytes | None, bytes | None, int | None, Sequence[tuple[str, bytes]]]

_TRANSACTIONAL = 0x10  # batch attributes bit

NATIVE = _native is not None and version_supported()
if NATIVE:
    require(
        "native produce batches",
        [(MessageAccumulator.__init__, ("self._batch_size", "self._compression_type", "self._txn_manager"))],
    )


class NativeBatch:
    """One encoded batch, duck-typed as aiokafka's `BatchBuilder` for its accumulator and sender."""

    __slots__ = ("_body", "_count", "_first_timestamp", "_max_timestamp", "_attributes", "_producer", "_buffer")

    def __init__(self, body: bytes, count: int, first_timestamp: int, max_timestamp: int, transactional: bool) -> None:
        self._body = body
        self._count = count
        self._first_timestamp = first_timestamp
        self._max_timestamp = max_timestamp
        self._attributes = _TRANSACTIONAL if transactional else 0
        self._producer = (-1, -1, 0)  # aiokafka's BatchBuilder: no producer id, base sequence 0
        self._buffer: bytes | None = None

    def record_count(self) -> int:
        return self._count

    def closed(self) -> bool:
        return True  # nothing is ever appended by the producer's own send()

    def close(self) -> None:
        pass

    def append(self, **_: Any) -> None:
        return None  # full: aiokafka then starts a batch of its own

    def size(self) -> int:
        return len(self._body) + 61

    def _set_producer_state(self, producer_id: int, producer_epoch: int, base_sequence: int) -> None:
        self._producer = (producer_id, producer_epoch, base_sequence)

    def _build(self) -> bytes:
        if self._buffer is None:
            self._buffer = _native.build_batch(
                self._body, self._count, self._first_timestamp, self._max_timestamp, self._attributes, *self._producer
            )
        return self._buffer


def native_batches_for(producer: AIOKafkaProducer) -> tuple[int, bool] | None:
    """(batch size, transactional) when `producer`'s batches can be encoded natively, else None."""
    if not NATIVE:
        return None
    accumulator: Any = getattr(producer, "_message_accumulator", None)
    if accumulator is None or accumulator._compression_type:
        return None
    manager = accumulator._txn_manager
    return accumulator._batch_size, manager is not None and manager.transactional_id is not None


def encode(records: list[Queued], batch_size: int, transactional: bool) -> Iterator[NativeBatch]:
    """`records` as consecutive batches of at most `batch_size` bytes (a larger record alone in its batch)."""
    now_ms = int(time.time() * 1000)
    start, end = 0, len(records)
    while start < end:
        body, stop, first, last = _native.encode_records(records, start, batch_size, now_ms)
        yield NativeBatch(body, stop - start, first, last, transactional)
        start = stop

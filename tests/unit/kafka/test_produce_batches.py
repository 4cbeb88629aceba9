"""Native produce batches are aiokafka's, byte for byte, and the record collector sends the same bytes either way.

aiokafka's `BatchBuilder` is the reference: the same records, batch size and producer state must give the same
batches (where one ends, header, CRC, records), and the consumer's decoder must read them back.
"""

from __future__ import annotations

import asyncio
import time
from types import SimpleNamespace
from typing import Any

import pytest
from aiokafka.producer.message_accumulator import BatchBuilder
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlet import _record_batch, _record_encoder
from streamlet.kafka import produce_batches
from streamlet.kafka.produce_batches import Queued, encode
from streamlet.runtime.record_collector import RecordCollector

PRODUCER_STATE = (4711, 3, 17)  # producer id, epoch, base sequence, as the sender sets them


def _aiokafka_batches(records: list[Queued], batch_size: int, transactional: bool) -> list[bytes]:
    """What the collector's aiokafka path builds: append until the builder is full, then a new builder."""
    built: list[bytes] = []
    batch = BatchBuilder(batch_size, 0, is_transactional=transactional)
    for key, value, timestamp, headers in records:
        if batch.append(key=key, value=value, timestamp=timestamp, headers=list(headers)) is None:
            built.append(_finish(batch))
            batch = BatchBuilder(batch_size, 0, is_transactional=transactional)
            assert batch.append(key=key, value=value, timestamp=timestamp, headers=list(headers)) is not None
    if batch.record_count():
        built.append(_finish(batch))
    return built


def _finish(batch: Any) -> bytes:
    batch._set_producer_state(*PRODUCER_STATE)
    return bytes(batch._build())


def _native_batches(records: list[Queued], batch_size: int, transactional: bool) -> list[bytes]:
    return [_finish(batch) for batch in encode(records, batch_size, transactional)]


_bytes = st.one_of(st.none(), st.binary(max_size=60))
_headers = st.lists(st.tuples(st.text(max_size=6), st.one_of(st.none(), st.binary(max_size=6))), max_size=3)
_records = st.lists(st.tuples(_bytes, _bytes, st.integers(0, 2**42), _headers), min_size=1, max_size=40)


def test_the_encoder_is_built() -> None:
    assert produce_batches.NATIVE


@settings(max_examples=200, deadline=None)
@given(records=_records, batch_size=st.integers(1, 2_000), transactional=st.booleans())
def test_native_batches_are_aiokafkas_bytes(records: list[Queued], batch_size: int, transactional: bool) -> None:
    assert _native_batches(records, batch_size, transactional) == _aiokafka_batches(records, batch_size, transactional)


def test_a_batch_ends_where_aiokafkas_ends_at_every_batch_size() -> None:
    records: list[Queued] = [(b"word-17", b"%d" % i, 1_000 + i, ()) for i in range(30)]
    for batch_size in range(60, 400):
        assert _native_batches(records, batch_size, False) == _aiokafka_batches(records, batch_size, False)


@settings(max_examples=100, deadline=None)
@given(records=_records, batch_size=st.integers(100, 2_000))
def test_the_decoder_reads_native_batches_back(records: list[Queued], batch_size: int) -> None:
    decoded: list[_record_batch.BatchRecord] = []
    for batch in _native_batches(records, batch_size, False):
        decoded += _record_batch.decode_records(batch, 0, 0)
    assert [(r.key, r.value, r.timestamp, r.headers) for r in decoded] == [
        (k, v, t, tuple(h)) for k, v, t, h in records
    ]


def test_a_record_without_timestamp_gets_the_current_time() -> None:
    before = int(time.time() * 1000)
    (batch,) = encode([(b"k", b"v", None, ())], 1 << 14, False)
    after = int(time.time() * 1000)
    (record,) = _record_batch.decode_records(_finish(batch), 0, 0)
    assert before <= record.timestamp <= after


@pytest.mark.parametrize(
    ("record", "error"),
    [
        (("k", b"v", 1, ()), "key must be bytes"),
        ((b"k", 5, 1, ()), "value must be bytes"),
        ((b"k", b"v", 1.5, ()), "timestamp must be an int"),
        ((b"k", b"v", 1, [(b"h", b"x")]), r"header must be a \(str, bytes\)"),
        ((b"k", b"v"), "record must be a"),
    ],
)
def test_a_record_of_the_wrong_types_is_refused(record: Any, error: str) -> None:
    with pytest.raises(TypeError, match=error):
        _record_encoder.encode_records([record], 0, 1 << 14, 0)


class _Producer:
    """Just what the collector uses of an AIOKafkaProducer, with aiokafka's own BatchBuilder; the bytes of every
    batch it is handed are kept, built with a producer state as aiokafka's sender would."""

    def __init__(self, batch_size: int) -> None:
        self._message_accumulator = SimpleNamespace(_batch_size=batch_size, _compression_type=0, _txn_manager=None)
        self.sent: list[tuple[str, int, bytes]] = []

    def create_batch(self) -> BatchBuilder:
        return BatchBuilder(self._message_accumulator._batch_size, 0)

    async def partitions_for(self, topic: str) -> set[int]:
        return {0, 1, 2}

    async def send_batch(self, batch: Any, topic: str, *, partition: int) -> asyncio.Future[None]:
        self.sent.append((topic, partition, _finish(batch)))
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        future.set_result(None)
        return future


async def _collected(records: list[Queued], batch_size: int) -> list[tuple[str, int, bytes]]:
    producer = _Producer(batch_size)
    collector = RecordCollector(producer)  # type: ignore[arg-type]
    for key, value, timestamp, headers in records:
        collector.send("words", key, value, timestamp, headers=headers)
    await collector.drain()
    return producer.sent


@pytest.mark.parametrize("batch_size", [200, 16_384])
async def test_the_collector_sends_the_same_batches_with_and_without_the_encoder(
    batch_size: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    records: list[Queued] = [
        (f"word-{i % 37}".encode(), str(i).encode(), 1_000 + i, [("v", b"1")] if i % 5 == 0 else ()) for i in range(500)
    ]
    native = await _collected(records, batch_size)
    monkeypatch.setattr(produce_batches, "NATIVE", False)  # an install without the C extension
    fallback = await _collected(records, batch_size)
    assert len(native) >= 3  # a batch per partition at least, several when batches are small
    assert native == fallback


def test_a_compressing_producer_keeps_aiokafkas_builder() -> None:
    producer = _Producer(1 << 14)
    assert produce_batches.native_batches_for(producer) == (1 << 14, False)  # type: ignore[arg-type]
    producer._message_accumulator._compression_type = 1
    assert produce_batches.native_batches_for(producer) is None  # type: ignore[arg-type]

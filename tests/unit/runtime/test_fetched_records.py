"""The stream thread's consumers get `BatchRecord`s, a batch at a time; every other consumer gets ConsumerRecords.

aiokafka's own decoder is the reference: for the same fetched bytes, the batch records must carry what its
`ConsumerRecord`s carry, and taking them list by list must move the position exactly as its per-record
generator does, with the native decoder and with the pure-Python fallback.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
from aiokafka.consumer.fetcher import READ_UNCOMMITTED, PartitionRecords
from aiokafka.record.default_records import DefaultRecordBatch, DefaultRecordBatchBuilder
from aiokafka.structs import ConsumerRecord, TopicPartition
from hypothesis import given, settings
from hypothesis import strategies as st

from streamlet import _record_batch
from streamlet.kafka import record_blocks
from streamlet.runtime import fetched_records
from streamlet.runtime.fetched_records import RAW_RECORDS, BatchRecord, consumer_record

TP = TopicPartition("words", 3)
GZIP = DefaultRecordBatch.CODEC_GZIP

Record = tuple[int, bytes | None, bytes | None, list[tuple[str, bytes]]]  # timestamp, key, value, headers


def _batch(base_offset: int, records: list[Record], compression: int = 0) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=compression, is_transactional=0, producer_id=-1, producer_epoch=-1,
        base_sequence=-1, batch_size=1 << 24,
    )  # fmt: skip
    for delta, (timestamp, key, value, headers) in enumerate(records):
        builder.append(delta, timestamp=timestamp, key=key, value=value, headers=headers)
    raw = bytearray(builder.build())
    struct.pack_into(">q", raw, 0, base_offset)
    return bytes(raw)


def _partition_records(buffer: bytes, fetch_offset: int, key_deserializer: Any, check_crcs: bool = True) -> Any:
    records = record_blocks._RawMemoryRecords(buffer)
    return PartitionRecords(TP, records, [], fetch_offset, key_deserializer, None, check_crcs, READ_UNCOMMITTED)


@pytest.fixture(params=["native", "python"])
def decoder(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both decoders: the C extension's and the pure-Python fallback of an install without it."""
    if request.param == "python":
        monkeypatch.setattr(fetched_records, "_native", None)
        monkeypatch.setattr(record_blocks, "_native", None)
    return str(request.param)


def test_the_patch_is_installed_on_the_pinned_aiokafka() -> None:
    assert fetched_records.INSTALLED
    assert record_blocks.NATIVE


def test_a_raw_records_consumer_gets_batch_records_and_others_get_consumer_records(decoder: str) -> None:
    buffer = _batch(0, [(1_000, b"k", b"hello", [("h", b"1")]), (1_005, None, None, [])])
    raw = list(_partition_records(buffer, 0, RAW_RECORDS))
    plain = list(_partition_records(buffer, 0, None))
    assert all(type(r) is (BatchRecord if decoder == "python" else _record_batch.BatchRecord) for r in raw)
    assert all(isinstance(r, ConsumerRecord) for r in plain)
    assert raw == [(0, 1_000, b"k", b"hello", (("h", b"1"),), 0), (1, 1_005, None, None, (), 0)]
    # the error path rebuilds exactly what aiokafka would have handed out
    assert [consumer_record(TP, r) for r in raw] == plain
    assert consumer_record(TP, plain[0]) is plain[0]


def test_log_append_time_is_the_batch_max_timestamp_and_its_type(decoder: str) -> None:
    raw = bytearray(_batch(0, [(100, b"a", b"1", []), (300, b"b", b"2", [])]))
    attributes = struct.unpack_from(">h", raw, 21)[0]
    struct.pack_into(">h", raw, 21, attributes | 0x08)  # the CRC no longer matches: not checked here
    records = list(_partition_records(bytes(raw), 0, RAW_RECORDS, check_crcs=False))
    reference = list(_partition_records(bytes(raw), 0, None, check_crcs=False))
    assert [(r.timestamp, r.timestamp_type) for r in records] == [(300, 1), (300, 1)]
    assert [consumer_record(TP, r) for r in records] == reference


_bytes = st.one_of(st.none(), st.binary(max_size=20))
_record = st.tuples(
    st.integers(0, 2**40), _bytes, _bytes, st.lists(st.tuples(st.text(max_size=5), st.binary(max_size=5)), max_size=2)
)


@settings(max_examples=100, deadline=None)
@given(
    batches=st.lists(st.tuples(st.lists(_record, min_size=1, max_size=8), st.booleans()), min_size=1, max_size=4),
    skip=st.integers(0, 10),
    takes=st.lists(st.one_of(st.none(), st.integers(1, 7)), min_size=1, max_size=12),
    native=st.booleans(),
)
def test_taking_lists_reads_and_moves_the_position_as_aiokafka_does(
    batches: list[tuple[list[Record], bool]], skip: int, takes: list[int | None], native: bool
) -> None:
    """`getall(max_records)` as a sequence of takes: the records taken and the position after each take are
    aiokafka's after as many records of its generator."""
    buffer, offset = b"", 0
    for records, compressed in batches:
        buffer += _batch(offset, records, GZIP if compressed else 0)
        offset += len(records)
    fetch_offset = min(skip, offset - 1)
    saved = fetched_records._native
    fetched_records._native = saved if native else None  # type: ignore[assignment]
    try:
        ours = _partition_records(buffer, fetch_offset, RAW_RECORDS)
        reference = _partition_records(buffer, fetch_offset, None)
        for max_records in takes:
            taken, exhausted = ours._streamlet_take(max_records)
            expected = []
            for record in reference:
                expected.append(record)
                if max_records is not None and len(expected) >= max_records:
                    ended = False
                    break
            else:
                ended = True
            assert [consumer_record(TP, r) for r in taken] == expected
            assert ours.next_fetch_offset == reference.next_fetch_offset
            assert exhausted == ended
            if exhausted:
                break
    finally:
        fetched_records._native = saved

"""The stream thread's consumers get aiokafka's decoded batch records; every other consumer gets ConsumerRecords."""

from __future__ import annotations

from typing import Any

from aiokafka.consumer.fetcher import READ_UNCOMMITTED, PartitionRecords
from aiokafka.record.default_records import DefaultRecordBatchBuilder
from aiokafka.record.memory_records import MemoryRecords
from aiokafka.structs import ConsumerRecord, TopicPartition

from streamlet.runtime import fetched_records
from streamlet.runtime.fetched_records import RAW_RECORDS, consumer_record

TP = TopicPartition("words", 3)


def _fetched(key_deserializer: Any) -> list[Any]:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=0, producer_id=-1, producer_epoch=-1, base_sequence=-1,
        batch_size=1 << 20,
    )  # fmt: skip
    builder.append(0, timestamp=1_000, key=b"k", value=b"hello", headers=[("h", b"1")])
    builder.append(1, timestamp=1_005, key=None, value=None, headers=[])
    records = MemoryRecords(bytes(builder.build()))
    return list(PartitionRecords(TP, records, [], 0, key_deserializer, None, True, READ_UNCOMMITTED))


def test_the_patch_is_installed_on_the_pinned_aiokafka() -> None:
    assert fetched_records.INSTALLED


def test_a_raw_records_consumer_gets_the_decoded_records_and_others_get_consumer_records() -> None:
    raw = _fetched(RAW_RECORDS)
    plain = _fetched(None)
    assert not any(isinstance(r, ConsumerRecord) for r in raw)
    assert all(isinstance(r, ConsumerRecord) for r in plain)
    assert [(r.offset, r.timestamp, r.key, r.value) for r in raw] == [
        (0, 1_000, b"k", b"hello"),
        (1, 1_005, None, None),
    ]
    # the error path rebuilds exactly what aiokafka would have handed out
    assert [consumer_record(TP, r) for r in raw] == plain
    assert consumer_record(TP, plain[0]) is plain[0]

"""The offset commit metadata codec against the strings Kafka Streams 4.1.1 itself produces and reads.

The expected strings were printed by `org.apache.kafka.streams.processor.internals.TopicPartitionMetadata`
of kafka-streams-4.1.1.jar (`new TopicPartitionMetadata(t, new ProcessorMetadata()).encode()`, and
`TopicPartitionMetadata.decode(s).partitionTime()` for the decoded cases); they are not computed here.
"""

from __future__ import annotations

import pytest

from streamlet.runtime.topic_partition_metadata import UNKNOWN, TopicPartitionMetadata, merge_processor_metadata

KAFKA_ENCODED = [
    (0, "AgAAAAAAAAAA"),
    (1, "AgAAAAAAAAAB"),
    (-1, "Av//////////"),
    (9_000, "AgAAAAAAACMo"),
    (1_700_000_000_123, "AgAAAYvP5Wh7"),
    (2**63 - 1, "An//////////"),
]
# partition time 60000 with ProcessorMetadata {"store-a": 42}
KAFKA_WITH_PROCESSOR_METADATA = "AgAAAAAAAOpgAAAAAQAAAAdzdG9yZS1hAAAAAAAAACo="


@pytest.mark.parametrize(("partition_time", "encoded"), KAFKA_ENCODED)
def test_encode_is_kafkas(partition_time: int, encoded: str) -> None:
    assert TopicPartitionMetadata(partition_time).encode() == encoded


@pytest.mark.parametrize(("partition_time", "encoded"), KAFKA_ENCODED)
def test_decode_reads_kafkas(partition_time: int, encoded: str) -> None:
    assert TopicPartitionMetadata.decode(encoded) == TopicPartitionMetadata(partition_time)


def test_processor_metadata_round_trips_in_kafkas_format() -> None:
    decoded = TopicPartitionMetadata.decode(KAFKA_WITH_PROCESSOR_METADATA)
    assert decoded == TopicPartitionMetadata(60_000, {"store-a": 42})
    assert decoded.encode() == KAFKA_WITH_PROCESSOR_METADATA


@pytest.mark.parametrize(
    ("metadata", "partition_time"),
    [
        ("", UNKNOWN),  # a commit without metadata (a plain consumer's, or before this feature)
        (None, UNKNOWN),
        ("AQAAAAAAAAPo", 1000),  # version 1 (Kafka 2.x): time only
        ("AwAAAAAAAAPo", UNKNOWN),  # a future version: unknown, as Kafka logs and goes on
        ("not base64!", UNKNOWN),
        ("Ag", UNKNOWN),  # too short for the time
        ("AgAAAAAAAAPoAAAA", 1000),  # processor metadata cut short: Kafka keeps the time it read
        ("AgAAAAAAAAPo", 1000),
        ("AgAAAAAAAOpgAAAAAQAAAAdzdG9yZS1hAAAAAAAAACo", 60_000),  # padding is optional for Java's decoder
    ],
)
def test_decode_never_raises(metadata: str | None, partition_time: int) -> None:
    assert TopicPartitionMetadata.decode(metadata).partition_time == partition_time


def test_merge_keeps_the_larger_value_per_key() -> None:
    merged = {"a": 5, "b": 1}
    merge_processor_metadata(merged, {"a": 3, "b": 7, "c": 0})
    assert merged == {"a": 5, "b": 7, "c": 0}

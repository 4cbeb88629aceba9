"""Stream time survives a restart on the real broker: the partition time a task commits with its offsets
(Kafka's offset commit metadata) is what a new client resumes at.

A windowed count behind `suppress(until_window_closes(...))` reads its event time from the record value;
an empty value means "no time of its own", and Kafka's `UsePartitionTimeOnInvalidTimestamp` pattern gives
it the partition time. Phase one reaches partition time 2_100 and stops cleanly; a new client with an empty
state directory then reads one timeless record and one at 3_000. The timeless record only counts in window
[2_000, 3_000) if the new client resumed at the committed 2_100 (without it the partition time is unknown,
-1, and the record is dropped), and the record at 3_000 then closes that window, which was buffered before
the restart: its final count is 2, not 1. Times are offsets from a recent base: the windowed changelog's
time retention would delete records stamped in 1970, and the restored window store with them.
"""

from __future__ import annotations

import asyncio
import struct
import time
from pathlib import Path

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.structs import TopicPartition

from streamlet.config import StreamsConfig
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.runtime.topic_partition_metadata import TopicPartitionMetadata
from streamlet.serdes import StringSerde
from streamlet.topology import StreamsBuilder, Topology
from streamlet.topology.suppressed import BufferConfig, Suppressed
from streamlet.topology.timestamps import ConsumedRecord
from streamlet.topology.windows import TimeWindowedSerde, TimeWindows
from tests.support.kafka import KafkaTestCluster, unique_name

pytestmark = pytest.mark.integration

SIZE = 1_000


def value_time_or_partition_time(record: ConsumedRecord, partition_time: int) -> int:
    """The value's time; an empty value takes the partition time (-1 while unknown: dropped)."""
    return int(record.value) if record.value else partition_time


def _topology(source: str, sink: str) -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream(source, key_serde="str", value_serde="str")
        .group_by_key()
        .windowed_by(TimeWindows.of_size_with_no_grace(SIZE))
        .count("clicks")
        .suppress(Suppressed.until_window_closes(BufferConfig.unbounded()).with_name("final"))
        .to_stream()
        .to(sink, key_serde=TimeWindowedSerde(StringSerde(), SIZE), value_serde="int64")
    )
    return builder.build()


def _config(kafka: KafkaTestCluster, app_id: str, state_dir: Path, guarantee: str) -> StreamsConfig:
    return StreamsConfig(
        application_id=app_id,
        bootstrap_servers=kafka.bootstrap_servers,
        state_dir=str(state_dir),
        processing_guarantee=guarantee,
        commit_interval_ms=200,
        timestamp_extractor=value_time_or_partition_time,
    )  # type: ignore[arg-type]


async def _produce(kafka: KafkaTestCluster, topic: str, values: list[str]) -> None:
    await kafka.produce(topic, [(b"user", value) for value in values], partition=0)


async def _finals(kafka: KafkaTestCluster, sink: str, expected: int) -> dict[int, int]:
    """Window start -> final count, from what was written to the sink (committed records only)."""
    records = await kafka.drain(sink, 1, expected=expected, read_committed=True, timeout=60)
    await asyncio.sleep(1)  # anything more (a duplicate) would be there by now
    records = await kafka.drain(sink, 1, read_committed=True, timeout=60)
    serde = TimeWindowedSerde(StringSerde(), SIZE)
    out: dict[int, int] = {}
    for record in records:
        windowed = serde.deserialize(sink, record.key)
        assert windowed is not None and windowed.window.start not in out, "a window emitted twice"
        out[windowed.window.start] = struct.unpack(">q", record.value)[0]
    return out


async def _committed_metadata(kafka: KafkaTestCluster, app_id: str, source: str) -> str:
    admin = AIOKafkaAdminClient(bootstrap_servers=kafka.bootstrap_servers)
    await admin.start()
    try:
        offsets = await admin.list_consumer_group_offsets(app_id)
        return str(offsets[TopicPartition(source, 0)].metadata)
    finally:
        await admin.close()


@pytest.mark.parametrize("guarantee", ["at_least_once", "exactly_once_v2"])
async def test_a_restarted_client_resumes_at_the_committed_partition_time(
    kafka: KafkaTestCluster, tmp_path: Path, guarantee: str
) -> None:
    source = await kafka.create_topic("timed-clicks", partitions=1)
    sink = await kafka.create_topic("final-timed-clicks", partitions=1)
    app_id = unique_name("stream-time")
    for suffix in ("clicks-changelog", "final-store-changelog"):
        kafka.track(f"{app_id}-{suffix}")
    topology = _topology(source, sink)
    base = (int(time.time() * 1000) // 60_000 - 10) * 60_000

    client = KafkaStreams(topology, _config(kafka, app_id, tmp_path / "a", guarantee))
    await client.start()
    try:
        await _produce(kafka, source, [str(base + t) for t in (1_000, 1_500, 2_100)])
        # 2_100 closed [1_000, 2_000); [2_000, 3_000) is buffered
        assert await _finals(kafka, sink, 1) == {base + 1_000: 2}
    finally:
        await client.close()  # clean: commits offset 3 with partition time 2_100
    metadata = await _committed_metadata(kafka, app_id, source)
    assert TopicPartitionMetadata.decode(metadata).partition_time == base + 2_100, metadata

    client = KafkaStreams(topology, _config(kafka, app_id, tmp_path / "b", guarantee))  # nothing local
    await client.start()
    try:
        await _produce(kafka, source, ["", str(base + 3_000)])
        finals = await _finals(kafka, sink, 2)
    finally:
        await client.close()
    assert finals == {base + 1_000: 2, base + 2_000: 2}  # the timeless record counted at the restored 2_100

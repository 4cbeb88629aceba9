"""WordCount on the real broker, with KafkaStreams clients running in this process."""

from __future__ import annotations

import pytest

from examples.wordcount.dsl import build_topology
from streamlet.config import StreamsConfig
from streamlet.runtime.kafka_streams import KafkaStreams
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.wordcount import expected_counts, wait_for_counts

pytestmark = pytest.mark.integration

LINES = [
    "all streams lead to kafka",
    "hello kafka streams",
    "join kafka summit",
    "a b c d e f g h i j k l m n o p q r s t u v w x y z",
] * 5


async def test_wordcount_two_clients_two_threads(kafka: KafkaTestCluster, tmp_path) -> None:
    source = await kafka.create_topic("plaintext", partitions=6)
    sink = await kafka.create_topic("wordcount-output", partitions=6)
    app_id = unique_name("wordcount")
    for suffix in ("counts-store-repartition", "counts-store-changelog"):
        kafka.track(f"{app_id}-{suffix}")
    topology = build_topology(source, sink)
    clients = [
        KafkaStreams(
            topology,
            StreamsConfig(
                application_id=app_id,
                bootstrap_servers=kafka.bootstrap_servers,
                state_dir=str(tmp_path / f"client-{i}"),
                num_stream_threads=2,
                commit_interval_ms=200,
            ),
        )
        for i in range(2)
    ]
    try:
        for client in clients:
            await client.start()
        await kafka.produce(source, [(None, line.encode()) for line in LINES])
        expected = expected_counts(LINES)
        assert await wait_for_counts(kafka, sink, expected) == expected
    finally:
        for client in clients:
            await client.close()


async def test_pre_aggregated_wordcount_sends_fewer_repartition_records_and_counts_the_same(
    kafka: KafkaTestCluster, tmp_path
) -> None:
    source = await kafka.create_topic("plaintext", partitions=3)
    sink = await kafka.create_topic("wordcount-output", partitions=3)
    app_id = unique_name("wordcount-pre")
    repartition = f"{app_id}-counts-store-repartition"
    for topic in (repartition, f"{app_id}-counts-store-changelog"):
        kafka.track(topic)
    config = StreamsConfig(
        application_id=app_id,
        bootstrap_servers=kafka.bootstrap_servers,
        state_dir=str(tmp_path / "client"),
        num_stream_threads=2,
        commit_interval_ms=500,
    )
    client = KafkaStreams(build_topology(source, sink, pre_aggregate=True), config)
    lines = LINES * 20
    try:
        await client.start()
        await kafka.produce(source, [(None, line.encode()) for line in lines])
        expected = expected_counts(lines)
        assert await wait_for_counts(kafka, sink, expected, partitions=3) == expected
    finally:
        await client.close()
    words = sum(expected.values())
    sent = sum((await kafka.end_offsets(repartition, 3)).values())
    # at most one partial per word per input task per commit: far fewer than one record per word
    assert 0 < sent < words / 4, (sent, words)

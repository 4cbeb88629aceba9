"""Bad input on the real broker: undecodable records, and a store offset that runs past its changelog."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka.structs import TopicPartition

from examples.wordcount.dsl import build_topology
from streamlet.config import StreamsConfig
from streamlet.errors import DeserializationFailure
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.state.rocksdb_store import RocksDBStore
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.wordcount import expected_counts, wait_for_counts

pytestmark = pytest.mark.integration

GOOD = ["one two", "two three", "three three"]
BAD = b"\xff\xfe not utf-8"


async def _topics(kafka: KafkaTestCluster) -> tuple[str, str, str]:
    source = await kafka.create_topic("plaintext", partitions=1)
    sink = await kafka.create_topic("wordcount-output", partitions=1)
    app_id = unique_name("wordcount-bad")
    for suffix in ("counts-store-repartition", "counts-store-changelog"):
        kafka.track(f"{app_id}-{suffix}")
    return source, sink, app_id


def _client(kafka: KafkaTestCluster, source: str, sink: str, app_id: str, state_dir, **extra) -> KafkaStreams:
    config = StreamsConfig(
        application_id=app_id,
        bootstrap_servers=kafka.bootstrap_servers,
        state_dir=str(state_dir),
        commit_interval_ms=200,
        **extra,
    )
    return KafkaStreams(build_topology(source, sink), config)


async def test_fail_handler_stops_with_the_record_position(kafka: KafkaTestCluster, tmp_path) -> None:
    source, sink, app_id = await _topics(kafka)
    await kafka.produce(source, [(None, GOOD[0].encode()), (None, BAD)])
    client = _client(kafka, source, sink, app_id, tmp_path)
    await client.start()
    try:
        with pytest.raises(DeserializationFailure, match=rf"topic {source} partition 0 offset 1"):
            await asyncio.wait_for(client.wait(), timeout=60)
    finally:
        await client.close()


async def test_log_and_continue_skips_and_counts(kafka: KafkaTestCluster, tmp_path) -> None:
    source, sink, app_id = await _topics(kafka)
    await kafka.produce(source, [(None, GOOD[0].encode()), (None, BAD), (None, GOOD[1].encode())])
    await kafka.produce(source, [(None, GOOD[2].encode())])
    client = _client(kafka, source, sink, app_id, tmp_path, deserialization_exception_handler="log_and_continue")
    await client.start()
    try:
        expected = expected_counts(GOOD)
        assert await wait_for_counts(kafka, sink, expected, partitions=1) == expected
        assert sum(t.resources.handlers.deserialization.skipped for t in client.threads) == 1
    finally:
        await client.close()


async def test_dead_letter_topic_receives_the_raw_record(kafka: KafkaTestCluster, tmp_path) -> None:
    source, sink, app_id = await _topics(kafka)
    dead_letters = await kafka.create_topic("dead-letters", partitions=1)
    await kafka.produce(source, [(b"k", BAD), (None, GOOD[0].encode())])
    client = _client(
        kafka,
        source,
        sink,
        app_id,
        tmp_path,
        deserialization_exception_handler="dead_letter",
        dead_letter_topic=dead_letters,
    )
    await client.start()
    try:
        expected = expected_counts(GOOD[:1])
        assert await wait_for_counts(kafka, sink, expected, partitions=1) == expected
        records = await kafka.drain(dead_letters, 1, expected=1)
        assert [(r.key, r.value) for r in records] == [(b"k", BAD)]
    finally:
        await client.close()


async def test_checkpoint_beyond_changelog_end_wipes_and_restores(kafka: KafkaTestCluster, tmp_path) -> None:
    source, sink, app_id = await _topics(kafka)
    await kafka.produce(source, [(None, line.encode()) for line in GOOD])
    client = _client(kafka, source, sink, app_id, tmp_path)
    await client.start()
    try:
        assert await wait_for_counts(kafka, sink, expected_counts(GOOD), partitions=1) == expected_counts(GOOD)
    finally:
        await client.close()

    # as if the changelog had been deleted and recreated: the store's offset claims far more than exists
    changelog = TopicPartition(f"{app_id}-counts-store-changelog", 0)
    store = RocksDBStore("counts-store", tmp_path / app_id / "1_0" / "rocksdb" / "counts-store")
    try:
        assert changelog in store.committed_offsets()
        store.commit({changelog: 1_000_000})
        store.flush()
    finally:
        store.close()

    client = _client(kafka, source, sink, app_id, tmp_path)
    await client.start()
    try:
        more = ["three four"]
        await kafka.produce(source, [(None, line.encode()) for line in more])
        expected = expected_counts(GOOD + more)  # restored from offset 0, then counting on
        assert await wait_for_counts(kafka, sink, expected, partitions=1) == expected
    finally:
        await client.close()

"""The Faust-style WordCount (agent + table) on the real broker, two clients with two threads each."""

from __future__ import annotations

import importlib
import sys

import pytest

from streamlet.runtime.kafka_streams import KafkaStreams
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.wordcount import SEED_LINE, expected_counts, real_text_lines, wait_for_counts

pytestmark = pytest.mark.integration


async def test_agents_wordcount_counts_every_word(kafka: KafkaTestCluster, tmp_path, monkeypatch) -> None:
    source = await kafka.create_topic("plaintext", partitions=6)
    sink = await kafka.create_topic("wordcount-output", partitions=6)
    app_id = unique_name("wordcount-agents")
    for suffix in ("counts-store-repartition", "counts-store-changelog"):
        kafka.track(f"{app_id}-{suffix}")
    monkeypatch.setenv("WORDCOUNT_INPUT_TOPIC", source)
    monkeypatch.setenv("WORDCOUNT_OUTPUT_TOPIC", sink)
    monkeypatch.setenv("WORDCOUNT_APPLICATION_ID", app_id)
    sys.modules.pop("examples.wordcount.agents", None)
    app = importlib.import_module("examples.wordcount.agents").app
    clients: list[KafkaStreams] = [
        app.streams(
            bootstrap_servers=kafka.bootstrap_servers,
            state_dir=str(tmp_path / f"c{i}"),
            num_stream_threads=2,
            commit_interval_ms=300,
        )
        for i in range(2)
    ]
    lines = real_text_lines(300) + [SEED_LINE]
    try:
        for client in clients:
            await client.start()
        await kafka.produce(source, [(None, line.encode()) for line in lines])
        expected = expected_counts(lines)
        assert await wait_for_counts(kafka, sink, expected) == expected
    finally:
        for client in clients:
            await client.close()

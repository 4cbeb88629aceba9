"""`merge.repartition.topics` on the real broker: two word counts below one `flat_map` share one repartition
topic; both count right (expected counts computed here from the input lines, not by streamlet)."""

from __future__ import annotations

from pathlib import Path

import pytest

from streamlet.config import StreamsConfig
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.topology import StreamsBuilder, Topology
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.wordcount import expected_counts, wait_for_counts

pytestmark = pytest.mark.integration

PARTITIONS = 3
LINES = ["all streams lead to kafka", "hello kafka streams", "a b c a b a"] * 4  # split() = Kafka's split here


def _topology(source: str, all_words: str, long_words: str) -> Topology:
    builder = StreamsBuilder()
    words = builder.stream(source, "str", "str").flat_map(
        lambda key, line: [(word, word) for word in line.lower().split()], name="words"
    )
    words.group_by_key("str", "str").count("all-words").to_stream().to(all_words, "str", "int64")
    longer = words.filter(lambda word, _: len(word) > 1)
    longer.group_by_key("str", "str").count("long-words").to_stream().to(long_words, "str", "int64")
    return builder.build("merge.repartition.topics")


async def test_two_counts_below_one_key_change_share_one_repartition_topic(
    kafka: KafkaTestCluster, tmp_path: Path
) -> None:
    source = await kafka.create_topic("lines", partitions=PARTITIONS)
    all_words = await kafka.create_topic("all-words", partitions=PARTITIONS)
    long_words = await kafka.create_topic("long-words", partitions=PARTITIONS)
    app_id = unique_name("merged-repartition")
    for internal in ("all-words-repartition", "all-words-changelog", "long-words-changelog"):
        kafka.track(f"{app_id}-{internal}")
    topology = _topology(source, all_words, long_words)
    assert topology.repartition_topics() == ["all-words-repartition"]
    config = StreamsConfig(
        application_id=app_id,
        bootstrap_servers=kafka.bootstrap_servers,
        state_dir=str(tmp_path),
        num_stream_threads=2,
        commit_interval_ms=200,
    )
    client = KafkaStreams(topology, config)
    await client.start()
    try:
        await kafka.produce(source, [(None, line.encode()) for line in LINES])
        everything = expected_counts(LINES)
        assert await wait_for_counts(kafka, all_words, everything, partitions=PARTITIONS) == everything
        longer = {word: count for word, count in everything.items() if len(word) > 1}
        assert await wait_for_counts(kafka, long_words, longer, partitions=PARTITIONS) == longer
    finally:
        await client.close()
    internal = {
        t
        for t in await kafka.admin.list_topics()
        if t.startswith(app_id) and t.endswith(("-repartition", "-changelog"))
    }
    assert internal == {
        f"{app_id}-{name}" for name in ("all-words-repartition", "all-words-changelog", "long-words-changelog")
    }

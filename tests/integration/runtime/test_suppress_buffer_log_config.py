"""`BufferConfig.with_logging_enabled(config)` on the real broker: the suppression buffer's changelog is created
with the given topic configs over Kafka Streams' changelog defaults, as the broker reports them."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiokafka.admin.config_resource import ConfigResource, ConfigResourceType

from streamlet.config import StreamsConfig
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.topology import StreamsBuilder
from streamlet.topology.suppressed import BufferConfig, Suppressed
from streamlet.topology.windows import TimeWindows
from tests.support.kafka import KafkaTestCluster, unique_name

pytestmark = pytest.mark.integration


async def _topic_configs(kafka: KafkaTestCluster, topic: str) -> dict[str, tuple[str, bool]]:
    """Each config of `topic`: (value, set on the topic rather than a broker default)."""
    [response] = await kafka.admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
    [(error, _message, _type, _name, entries)] = response.resources
    assert error == 0, response
    # entries: (name, value, read_only, config_source, is_sensitive, synonyms); source 1 = DYNAMIC_TOPIC_CONFIG
    return {entry[0]: (entry[1], entry[3] == 1) for entry in entries}


async def test_the_buffer_changelog_gets_the_given_topic_configs(kafka: KafkaTestCluster, tmp_path: Path) -> None:
    source = await kafka.create_topic("clicks")
    app_id = unique_name("suppress-log-config")
    changelog = f"{app_id}-final-store-changelog"
    kafka.track(f"{app_id}-counts-changelog")
    kafka.track(changelog)
    buffer = BufferConfig.unbounded().with_logging_enabled(
        {"min.compaction.lag.ms": "1234", "cleanup.policy": "compact,delete", "retention.ms": "7200000"}
    )
    builder = StreamsBuilder()
    (
        builder.stream(source, key_serde="str", value_serde="str")
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(1_000, 500))
        .count("counts")
        .suppress(Suppressed.until_window_closes(buffer).with_name("final"))
    )
    config = StreamsConfig(application_id=app_id, bootstrap_servers=kafka.bootstrap_servers, state_dir=str(tmp_path))
    client = KafkaStreams(builder.build(), config)
    await client.start()  # creates the internal topics
    await client.close()

    got = await _topic_configs(kafka, changelog)
    assert got["min.compaction.lag.ms"] == ("1234", True)
    assert got["cleanup.policy"] == ("compact,delete", True)  # the user's over Kafka's "compact"
    assert got["retention.ms"] == ("7200000", True)
    assert got["message.timestamp.type"] == ("CreateTime", True)  # Kafka's default, kept
    window = await _topic_configs(kafka, f"{app_id}-counts-changelog")
    assert window["min.compaction.lag.ms"][1] is False  # the window store's changelog is not given them

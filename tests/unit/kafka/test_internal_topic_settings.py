"""Replication settings of internal topics: the replication factor and topic configs every created topic gets."""

from __future__ import annotations

import pytest

from streamlet.config import StreamsConfig, parse_topic_configs
from streamlet.errors import ConfigError
from streamlet.kafka.topics import InternalTopicManager, TopicSpec
from streamlet.runtime.clients import AioKafkaClientSupplier


def test_internal_topic_configs_from_a_mapping_a_string_and_the_topic_prefix() -> None:
    assert StreamsConfig("a").topic_configs == {}
    as_dict = StreamsConfig("a", internal_topic_configs={"min.insync.replicas": 2})
    assert as_dict.topic_configs == {"min.insync.replicas": "2"}  # strings, as CreateTopics carries them
    as_text = StreamsConfig("a", internal_topic_configs="min.insync.replicas=2, retention.ms=1000")
    assert as_text.topic_configs == {"min.insync.replicas": "2", "retention.ms": "1000"}
    prefixed = StreamsConfig.from_mapping(
        {"application_id": "a", "topic.min.insync.replicas": "2", "internal_topic_configs": "segment.ms=60000"}
    )
    assert prefixed.topic_configs == {"min.insync.replicas": "2", "segment.ms": "60000"}
    assert hash(prefixed) is not None  # a config stays hashable with a dict inside


def test_topic_prefixed_settings_on_the_command_line_reach_internal_topic_configs() -> None:
    from streamlet.app_commands import parse_config_pairs

    pairs = parse_config_pairs(["topic.min.insync.replicas=2", "replication.factor=3"])
    config = StreamsConfig.from_mapping({"application_id": "a", **{k: v for k, (v, _) in pairs.items()}})
    assert (config.replication_factor, config.topic_configs) == (3, {"min.insync.replicas": "2"})


def test_a_malformed_internal_topic_configs_string_is_an_error_naming_the_pair() -> None:
    with pytest.raises(ConfigError, match="'min.insync.replicas'"):
        parse_topic_configs("min.insync.replicas")


async def test_created_topics_get_the_replication_factor_and_configs_under_their_own() -> None:
    config = StreamsConfig("a", replication_factor=3, internal_topic_configs={"min.insync.replicas": "2"})
    manager = InternalTopicManager(
        config.cluster, replication_factor=config.replication_factor, topic_configs=config.topic_configs
    )
    try:
        changelog = manager._new_topic(TopicSpec("a-store-changelog", 4, {"cleanup.policy": "compact"}))
        assert (changelog.name, changelog.num_partitions, changelog.replication_factor) == ("a-store-changelog", 4, 3)
        assert changelog.topic_configs == {"min.insync.replicas": "2", "cleanup.policy": "compact"}
        own = manager._new_topic(TopicSpec("a-reply", 1, {"min.insync.replicas": "1"}))
        assert own.topic_configs == {"min.insync.replicas": "1"}  # a topic's own setting wins
    finally:
        await manager.close()


async def test_the_default_replication_factor_is_the_brokers() -> None:
    manager = InternalTopicManager(StreamsConfig("a").cluster)
    try:
        topic = manager._new_topic(TopicSpec("a-x-repartition", 2))
        # -1 with an empty assignment: CreateTopics v4+ lets the broker use default.replication.factor
        assert (topic.replication_factor, topic.replica_assignments) == (-1, {})
    finally:
        await manager.close()


async def test_every_producer_waits_for_all_in_sync_replicas() -> None:
    """acks=all (-1 on the wire): with min.insync.replicas=2 a write is on two brokers before it counts as sent."""
    supplier = AioKafkaClientSupplier()
    config = StreamsConfig("a")
    for transactional_id in (None, "a-0_0"):
        producer = supplier.producer(config, "a-producer", transactional_id)
        try:
            assert producer._sender._acks == -1
        finally:
            await producer.stop()

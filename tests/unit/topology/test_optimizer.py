"""`topology.optimization`: Kafka's config parsing, and `reuse.ktable.source.topics` in the built topology."""

from __future__ import annotations

import pytest
from aiokafka.structs import TopicPartition

from streamlet import App
from streamlet.config import StreamsConfig
from streamlet.errors import ConfigError
from streamlet.runtime.topology_metadata import TopologyMetadata
from streamlet.task_id import TaskId
from streamlet.topology import StreamsBuilder, Topology
from streamlet.topology.optimizer import (
    MERGE_REPARTITION_TOPICS,
    REUSE_KTABLE_SOURCE_TOPICS,
    SINGLE_STORE_SELF_JOIN,
    verify_topology_optimization,
)


@pytest.mark.parametrize(
    ("config", "rules"),
    [
        ("none", set()),
        ("all", {MERGE_REPARTITION_TOPICS, REUSE_KTABLE_SOURCE_TOPICS, SINGLE_STORE_SELF_JOIN}),
        ("reuse.ktable.source.topics", {REUSE_KTABLE_SOURCE_TOPICS}),
        (
            "merge.repartition.topics , reuse.ktable.source.topics",
            {MERGE_REPARTITION_TOPICS, REUSE_KTABLE_SOURCE_TOPICS},
        ),
    ],
)
def test_accepted_values(config: str, rules: set[str]) -> None:
    assert verify_topology_optimization(config) == rules


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("bogus", "unrecognized value 'bogus'; accepted values: 'all', 'none', 'reuse.ktable.source.topics', 'merge"),
        (" none", "unrecognized value ' none'"),  # Kafka splits on commas only: outer blanks are kept
        ("none, reuse.ktable.source.topics", "'none' and 'all' stand alone"),
        ("all,none", "'none' and 'all' stand alone"),
    ],
)
def test_rejected_values_name_the_accepted_ones(config: str, message: str) -> None:
    with pytest.raises(ConfigError, match="topology_optimization=") as info:
        verify_topology_optimization(config)
    assert message in str(info.value)


def test_the_config_and_the_builder_check_it() -> None:
    with pytest.raises(ConfigError, match="unrecognized value 'reuse'"):
        StreamsConfig(application_id="app", topology_optimization="reuse")
    with pytest.raises(ConfigError, match="unrecognized value 'reuse'"):
        StreamsBuilder().build("reuse")


def _customers(builder: StreamsBuilder, store_name: str | None = "customers-store") -> None:
    customers = builder.table("customers", store_name=store_name)
    builder.stream("orders").join(customers, lambda order, customer: order).to("enriched")


def test_a_source_table_store_uses_its_topic_as_changelog() -> None:
    builder = StreamsBuilder()
    _customers(builder)
    topology = builder.build(REUSE_KTABLE_SOURCE_TOPICS)
    assert topology.source_changelogs() == {"customers-store": "customers"}
    assert topology.changelog_topics() == {"customers-store": "customers"}
    assert topology.internal_topics() == []
    assert topology.stateful_subtopologies() == {0}  # still a stateful task: it has a changelog to restore from

    metadata = TopologyMetadata(topology, "app")
    assert metadata.names.changelog_topic("customers-store") == "customers"  # a user topic: no prefix
    assert metadata.changelog_topics() == frozenset()  # nothing the application writes
    assert metadata.is_source_changelog(TopicPartition("customers", 0))
    metadata.task_partitions({"customers": 2, "orders": 2})
    assert metadata.changelog_partitions(TaskId(0, 1)) == {"customers-store": TopicPartition("customers", 1)}


def test_an_unmaterialized_table_has_no_store_to_reuse_the_topic_for() -> None:
    builder = StreamsBuilder()
    builder.table("customers").to_stream().to("copy")
    topology = builder.build(REUSE_KTABLE_SOURCE_TOPICS)
    assert topology.source_changelogs() == {} and topology.changelog_topics() == {}


def test_aggregations_keep_their_changelogs() -> None:
    builder = StreamsBuilder()
    builder.table("customers", store_name="customers-store").group_by(lambda k, v: (v, k)).count("per-city")
    topology = builder.build(REUSE_KTABLE_SOURCE_TOPICS)
    assert topology.changelog_topics() == {"customers-store": "customers", "per-city": "per-city-changelog"}
    assert [t.name for t in topology.internal_topics()] == [
        "per-city-repartition",
        "per-city-changelog",
    ]


def test_the_app_builds_with_its_optimization() -> None:
    app = App("app", topology_optimization=REUSE_KTABLE_SOURCE_TOPICS)
    _customers(app.builder)
    topology: Topology = app.topology()
    assert topology.source_changelogs() == {"customers-store": "customers"}


def test_a_worker_override_builds_the_apps_topology_and_cannot_change_it_later(tmp_path: object) -> None:
    app = App("app")
    _customers(app.builder)
    streams = app.streams(topology_optimization=REUSE_KTABLE_SOURCE_TOPICS, state_dir=str(tmp_path))
    assert streams.topology.source_changelogs() == {"customers-store": "customers"}
    with pytest.raises(ConfigError, match="already built with 'reuse.ktable.source.topics'"):
        app.topology("none")


def _two_counts(pre_aggregate: bool) -> Topology:
    builder = StreamsBuilder()
    words = builder.stream("in").select_key(lambda k, v: v)
    words.group_by_key().count("plain")
    words.group_by_key(name="partials").count("pre", pre_aggregate=pre_aggregate)
    return builder.build(MERGE_REPARTITION_TOPICS)


def test_repartitions_below_one_key_change_merge_unless_one_carries_partial_aggregates() -> None:
    """The describe() oracle checks the merge against Kafka; a pre-aggregation (streamlet's own) writes partial
    aggregates into its topic, which another aggregation must never read, so that one stays apart."""
    assert _two_counts(pre_aggregate=False).repartition_topics() == ["plain-repartition"]
    assert _two_counts(pre_aggregate=True).repartition_topics() == ["plain-repartition", "partials-repartition"]

"""Sub-topologies, topics and internal topics of built topologies, and DSL validation."""

from __future__ import annotations

import pytest

from streamlet.errors import MissingTopicError, TopologyError
from streamlet.serdes import LongSerde, StringSerde
from streamlet.topology import (
    InternalTopic,
    KGroupedStream,
    KStream,
    KTable,
    StreamsBuilder,
    Topology,
)
from streamlet.topology.nodes import SinkSpec, SourceSpec
from tests.unit.topology.test_describe import wordcount_builder

APP = "streams-wordcount"


def test_exports() -> None:
    builder = StreamsBuilder()
    stream = builder.stream("in")
    grouped = stream.group_by_key()
    table = grouped.count()
    assert isinstance(stream, KStream) and isinstance(grouped, KGroupedStream) and isinstance(table, KTable)
    assert isinstance(builder.build(), Topology)


def test_wordcount_sub_topologies() -> None:
    topology = wordcount_builder().build()
    sub0, sub1 = topology.subtopologies
    assert sub0.id == 0 and sub1.id == 1
    assert sub0.nodes == (
        "KSTREAM-SOURCE-0000000000",
        "KSTREAM-FLATMAPVALUES-0000000001",
        "KSTREAM-KEY-SELECT-0000000002",
        "counts-store-repartition-filter",
        "counts-store-repartition-sink",
    )
    assert sub0.source_topics == ("streams-plaintext-input",)
    assert sub0.sink_topics == ("counts-store-repartition",)
    assert sub0.repartition_source_topics == ()
    assert sub0.repartition_sink_topics == ("counts-store-repartition",)
    assert sub0.store_names == () and not sub0.stateful
    assert sub1.source_topics == ("counts-store-repartition",)
    assert sub1.repartition_source_topics == ("counts-store-repartition",)
    assert sub1.sink_topics == ("streams-wordcount-output",)
    assert sub1.store_names == ("counts-store",) and sub1.stateful
    assert sub1.changelog_topics() == {"counts-store": "counts-store-changelog"}
    assert topology.stateful_subtopologies() == frozenset({1})


def test_wordcount_topic_names_match_the_seed() -> None:
    # The seed's `kafka-topics --list` shows exactly these internal topics for application id
    # "streams-wordcount": <app>-<store>-changelog and <app>-<name>-repartition.
    topology = wordcount_builder().build()
    assert topology.source_topics() == ["streams-plaintext-input", "counts-store-repartition"]
    assert topology.external_source_topics() == ["streams-plaintext-input"]
    assert topology.sink_topics() == ["counts-store-repartition", "streams-wordcount-output"]
    assert topology.repartition_topics() == ["counts-store-repartition"]
    assert topology.changelog_topics() == {"counts-store": "counts-store-changelog"}


def test_wordcount_internal_topics_with_partition_counts() -> None:
    # Seed experiment: input created with 6 partitions -> repartition topic and changelog have 6 too.
    topics = wordcount_builder().build().internal_topics({"streams-plaintext-input": 6})
    assert [(t.name, t.partitions, t.kind) for t in topics] == [
        ("counts-store-repartition", 6, "repartition"),
        ("counts-store-changelog", 6, "changelog"),
    ]
    repartition, changelog = topics
    assert repartition.config["cleanup.policy"] == "delete"
    assert changelog.config["cleanup.policy"] == "compact"


def test_internal_topics_without_counts() -> None:
    topics = wordcount_builder().build().internal_topics()
    assert [t.partitions for t in topics] == [None, None]
    assert all(isinstance(t, InternalTopic) for t in topics)


def test_repartition_partition_count_is_max_of_upstream_sources_resolved_recursively() -> None:
    builder = StreamsBuilder()
    (
        builder.stream(["a", "b"])  # sub-topology 0 reads a (3) and b (5): its repartition topic gets 5
        .group_by(lambda k, v: v)
        .count("first")
        .to_stream()
        .map(lambda k, v: (v, k))
        .group_by_key()  # sub-topology 1 reads first-repartition (5): second-repartition gets 5 as well
        .count("second")
    )
    builder.stream("c").filter(lambda k, v: True).group_by_key().count("local")  # no repartition: 2 tasks
    topology = builder.build()
    # Nodes are written in the order their graph nodes were added, so "c" (added last) comes last.
    assert [s.source_topics for s in topology.subtopologies] == [
        ("a", "b"),
        ("first-repartition",),
        ("second-repartition",),
        ("c",),
    ]
    counts = {"a": 3, "b": 5, "c": 2}
    assert {t.name: t.partitions for t in topology.internal_topics(counts)} == {
        "first-repartition": 5,
        "second-repartition": 5,
        "local-changelog": 2,
        "first-changelog": 5,
        "second-changelog": 5,
    }
    assert topology.subtopology_partition_count(2, counts) == 5
    assert topology.subtopology_partition_count(3, counts) == 2
    assert topology.stateful_subtopologies() == frozenset({1, 2, 3})


def test_internal_topics_need_external_source_counts() -> None:
    with pytest.raises(MissingTopicError, match="streams-plaintext-input"):
        wordcount_builder().build().internal_topics({"other": 1})
    with pytest.raises(TopologyError, match="invalid partition count"):
        wordcount_builder().build().internal_topics({"streams-plaintext-input": 0})


def test_node_specs_carry_serdes() -> None:
    topology = wordcount_builder().build()
    source = topology.node("KSTREAM-SOURCE-0000000000")
    assert isinstance(source, SourceSpec) and isinstance(source.value_serde, StringSerde)
    sink = topology.node("KSTREAM-SINK-0000000008")
    assert isinstance(sink, SinkSpec) and isinstance(sink.value_serde, LongSerde)
    store = topology.stores["counts-store"]
    assert isinstance(store.key_serde, StringSerde) and isinstance(store.value_serde, LongSerde)
    with pytest.raises(TopologyError, match="no node named"):
        topology.node("nope")
    with pytest.raises(TopologyError, match="no sub-topology 7"):
        topology.subtopology(7)


def test_build_is_a_snapshot() -> None:
    builder = StreamsBuilder()
    stream = builder.stream("in")
    first = builder.build()
    stream.to("out")
    assert len(first.nodes) == 1 and len(builder.build().nodes) == 2
    assert str(first.describe()) != str(builder.build().describe())


def test_duplicate_names_are_rejected() -> None:
    builder = StreamsBuilder()
    stream = builder.stream("in")
    stream.filter(lambda k, v: True, name="f")
    with pytest.raises(TopologyError, match="Processor f is already added"):
        stream.map_values(lambda v: v, name="f")
    with pytest.raises(TopologyError, match="StateStore s is already added"):
        stream.group_by_key().count("s")
        stream.group_by_key().count("s")


def test_a_topic_can_be_read_by_one_source_only() -> None:
    builder = StreamsBuilder()
    builder.stream("in")
    with pytest.raises(TopologyError, match="Topic in has already been registered"):
        builder.stream(["x", "in"])


@pytest.mark.parametrize("name", ["", "has space", "a/b", "x" * 250, ".."])
def test_illegal_names_are_rejected(name: str) -> None:
    # Kafka Streams' Named.validate: 1-249 chars of [a-zA-Z0-9._-], not "." or "..".
    with pytest.raises(TopologyError, match="illegal|cannot be"):
        StreamsBuilder().stream("in").filter(lambda k, v: True, name=name)


def test_invalid_arguments() -> None:
    builder = StreamsBuilder()
    with pytest.raises(TopologyError, match="at least one topic"):
        builder.stream([])
    with pytest.raises(TopologyError, match="must be callable"):
        builder.stream("in").map_values(42)  # type: ignore[arg-type]
    with pytest.raises(TopologyError, match="key_serde: unknown serde"):
        builder.stream("in2", key_serde="float")
    with pytest.raises(TopologyError, match="non-empty topic"):
        builder.stream("in3").to("")

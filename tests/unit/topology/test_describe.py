"""`Topology.describe()`: Kafka Streams' node names and exact text format.

Where the expectations come from: the WordCount listing is copied from seed 000 (`topology.describe()` of
Kafka Streams 2.7.2). The others were written from Kafka Streams' naming rules (cited per test, from
`KStreamImpl`, `KGroupedStreamImpl`, `GroupedStreamAggregateBuilder`, `InternalStreamsBuilder`,
`InternalTopologyBuilder`) and then confirmed byte for byte against `Topology.describe()` of the real
kafka-streams 4.1.1 jar running the equivalent Java DSL code. Rules used throughout:

* one counter per builder, `%010d`; every generated processor/store name takes the next value, and a
  user-given processor name (`Named`) still burns one (`NamedInternal#orElseGenerateWithPrefix`);
* an unnamed aggregation store (`<PREFIX>STATE-STORE-n`) is named before its processor;
* a repartition burns three values (sink, filter, source) and names its nodes `<topic>-sink/-filter/
  -source` unless the topic prefix is itself generated (`KSTREAM.*-\\d{10}`);
* nodes are listed by descending sub-tree size, then name; sub-topologies in topology order;
* `"Topologies:\\n "` + `"  Sub-topology: <id>\\n"` + `"    <node>\\n"`... + `"\\n"` per sub-topology.
"""

from __future__ import annotations

import re

from streamlet.topology import StreamsBuilder
from streamlet.topology.description import ProcessorDescription, SinkDescription, SourceDescription
from tests.unit.topology._support import lines

# Seed 000, verbatim (Kafka Streams 2.7.2 `topology.describe()` of the WordCount below).
SEED_WORDCOUNT = """\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [streams-plaintext-input])
      --> KSTREAM-FLATMAPVALUES-0000000001
    Processor: KSTREAM-FLATMAPVALUES-0000000001 (stores: [])
      --> KSTREAM-KEY-SELECT-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-KEY-SELECT-0000000002 (stores: [])
      --> counts-store-repartition-filter
      <-- KSTREAM-FLATMAPVALUES-0000000001
    Processor: counts-store-repartition-filter (stores: [])
      --> counts-store-repartition-sink
      <-- KSTREAM-KEY-SELECT-0000000002
    Sink: counts-store-repartition-sink (topic: counts-store-repartition)
      <-- counts-store-repartition-filter

  Sub-topology: 1
    Source: counts-store-repartition-source (topics: [counts-store-repartition])
      --> KSTREAM-AGGREGATE-0000000003
    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [counts-store])
      --> KTABLE-TOSTREAM-0000000007
      <-- counts-store-repartition-source
    Processor: KTABLE-TOSTREAM-0000000007 (stores: [])
      --> KSTREAM-SINK-0000000008
      <-- KSTREAM-AGGREGATE-0000000003
    Sink: KSTREAM-SINK-0000000008 (topic: streams-wordcount-output)
      <-- KTABLE-TOSTREAM-0000000007

"""


def wordcount_builder() -> StreamsBuilder:
    """The seed's WordCount, in the Python DSL."""
    builder = StreamsBuilder()
    source = builder.stream("streams-plaintext-input", key_serde="str", value_serde="str")
    (
        source.flat_map_values(lambda value: [w for w in re.split(r"\W+", value.lower()) if w])
        .group_by(lambda key, value: value, key_serde="str", value_serde="str")
        .count("counts-store")
        .to_stream()
        .to("streams-wordcount-output", key_serde="str", value_serde="int64")
    )
    return builder


def test_wordcount_matches_the_seed_listing() -> None:
    text = str(wordcount_builder().build().describe())
    assert lines(text) == lines(SEED_WORDCOUNT)
    assert text.startswith("Topologies:\n   Sub-topology: 0\n")
    assert "\n\n  Sub-topology: 1\n" in text


def test_stateless_chain_map_values_to() -> None:
    # SOURCE takes 0, MAPVALUES 1, SINK 2 (KStreamImpl#mapValues, #to).
    builder = StreamsBuilder()
    builder.stream("in").map_values(lambda v: v).to("out")
    assert lines(str(builder.build().describe())) == lines("""\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [in])
      --> KSTREAM-MAPVALUES-0000000001
    Processor: KSTREAM-MAPVALUES-0000000001 (stores: [])
      --> KSTREAM-SINK-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Sink: KSTREAM-SINK-0000000002 (topic: out)
      <-- KSTREAM-MAPVALUES-0000000001

""")


def test_filter_group_by_key_count_needs_no_repartition() -> None:
    # filter keeps the key, so groupByKey().count() aggregates in place: no repartition topic. The unnamed
    # store takes 2 (MaterializedInternal -> newStoreName("KSTREAM-AGGREGATE-")) before the processor
    # takes 3 (KGroupedStreamImpl#doCount); a processor without children prints "--> none".
    builder = StreamsBuilder()
    builder.stream("in").filter(lambda k, v: True).group_by_key().count()
    assert lines(str(builder.build().describe())) == lines("""\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [in])
      --> KSTREAM-FILTER-0000000001
    Processor: KSTREAM-FILTER-0000000001 (stores: [])
      --> KSTREAM-AGGREGATE-0000000003
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])
      --> none
      <-- KSTREAM-FILTER-0000000001

""")


def test_map_group_by_key_reduce_repartitions_after_the_unnamed_store() -> None:
    # map changes the key, so groupByKey() repartitions. Store KSTREAM-REDUCE-STATE-STORE-2, processor
    # KSTREAM-REDUCE-3; the repartition topic is named after the store, which matches KSTREAM.*-\d{10},
    # so its nodes keep the generated names SINK-4, FILTER-5, SOURCE-6 (createRepartitionedSource).
    builder = StreamsBuilder()
    builder.stream("in").map(lambda k, v: (v, k)).group_by_key().reduce(lambda a, b: b).to_stream().to("out")
    assert lines(str(builder.build().describe())) == lines("""\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [in])
      --> KSTREAM-MAP-0000000001
    Processor: KSTREAM-MAP-0000000001 (stores: [])
      --> KSTREAM-FILTER-0000000005
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-FILTER-0000000005 (stores: [])
      --> KSTREAM-SINK-0000000004
      <-- KSTREAM-MAP-0000000001
    Sink: KSTREAM-SINK-0000000004 (topic: KSTREAM-REDUCE-STATE-STORE-0000000002-repartition)
      <-- KSTREAM-FILTER-0000000005

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000006 (topics: [KSTREAM-REDUCE-STATE-STORE-0000000002-repartition])
      --> KSTREAM-REDUCE-0000000003
    Processor: KSTREAM-REDUCE-0000000003 (stores: [KSTREAM-REDUCE-STATE-STORE-0000000002])
      --> KTABLE-TOSTREAM-0000000007
      <-- KSTREAM-SOURCE-0000000006
    Processor: KTABLE-TOSTREAM-0000000007 (stores: [])
      --> KSTREAM-SINK-0000000008
      <-- KSTREAM-REDUCE-0000000003
    Sink: KSTREAM-SINK-0000000008 (topic: out)
      <-- KTABLE-TOSTREAM-0000000007

""")


def test_group_by_with_unnamed_count_store() -> None:
    # Same numbering with groupBy (KEY-SELECT-1) + count(): this exact listing is also published as
    # real Kafka Streams output in the blog post "How to Effectively Scale a Kafka Streams Application".
    builder = StreamsBuilder()
    builder.stream("sourceTopic").group_by(lambda k, v: v).count().to_stream().to("targetTopic")
    assert lines(str(builder.build().describe())) == lines("""\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [sourceTopic])
      --> KSTREAM-KEY-SELECT-0000000001
    Processor: KSTREAM-KEY-SELECT-0000000001 (stores: [])
      --> KSTREAM-FILTER-0000000005
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-FILTER-0000000005 (stores: [])
      --> KSTREAM-SINK-0000000004
      <-- KSTREAM-KEY-SELECT-0000000001
    Sink: KSTREAM-SINK-0000000004 (topic: KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition)
      <-- KSTREAM-FILTER-0000000005

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000006 (topics: [KSTREAM-AGGREGATE-STATE-STORE-0000000002-repartition])
      --> KSTREAM-AGGREGATE-0000000003
    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])
      --> KTABLE-TOSTREAM-0000000007
      <-- KSTREAM-SOURCE-0000000006
    Processor: KTABLE-TOSTREAM-0000000007 (stores: [])
      --> KSTREAM-SINK-0000000008
      <-- KSTREAM-AGGREGATE-0000000003
    Sink: KSTREAM-SINK-0000000008 (topic: targetTopic)
      <-- KTABLE-TOSTREAM-0000000007

""")


def test_two_streams_and_to() -> None:
    # Both sources are named first (0, 1), then MAPVALUES-2, SINK-3, SINK-4. Unconnected sources form
    # separate sub-topologies, numbered in topology order (InternalTopologyBuilder#makeNodeGroups).
    builder = StreamsBuilder()
    a = builder.stream("a")
    b = builder.stream("b")
    a.map_values(lambda v: v).to("out-a")
    b.to("out-b")
    assert lines(str(builder.build().describe())) == lines("""\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [a])
      --> KSTREAM-MAPVALUES-0000000002
    Processor: KSTREAM-MAPVALUES-0000000002 (stores: [])
      --> KSTREAM-SINK-0000000003
      <-- KSTREAM-SOURCE-0000000000
    Sink: KSTREAM-SINK-0000000003 (topic: out-a)
      <-- KSTREAM-MAPVALUES-0000000002

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000001 (topics: [b])
      --> KSTREAM-SINK-0000000004
    Sink: KSTREAM-SINK-0000000004 (topic: out-b)
      <-- KSTREAM-SOURCE-0000000001

""")


def test_user_names_still_burn_counter_values() -> None:
    # Grouped.as("byword") names the repartition topic (groupByKey creates no node, burns nothing);
    # count(Named.as("cnt")) burns 3 after the store took 2; the repartition burns 4-6;
    # toStream(Named.as("ts")) burns 7, so the filter is KSTREAM-FILTER-8; Produced.as("mysink") burns 9.
    builder = StreamsBuilder()
    (
        builder.stream("in")
        .flat_map(lambda k, v: [(v, v)])
        .group_by_key(name="byword")
        .count(name="cnt")
        .to_stream(name="ts")
        .filter(lambda k, v: v > 1)
        .to("out", name="mysink")
    )
    assert lines(str(builder.build().describe())) == lines("""\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [in])
      --> KSTREAM-FLATMAP-0000000001
    Processor: KSTREAM-FLATMAP-0000000001 (stores: [])
      --> byword-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: byword-repartition-filter (stores: [])
      --> byword-repartition-sink
      <-- KSTREAM-FLATMAP-0000000001
    Sink: byword-repartition-sink (topic: byword-repartition)
      <-- byword-repartition-filter

  Sub-topology: 1
    Source: byword-repartition-source (topics: [byword-repartition])
      --> cnt
    Processor: cnt (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])
      --> ts
      <-- byword-repartition-source
    Processor: ts (stores: [])
      --> KSTREAM-FILTER-0000000008
      <-- cnt
    Processor: KSTREAM-FILTER-0000000008 (stores: [])
      --> mysink
      <-- ts
    Sink: mysink (topic: out)
      <-- KSTREAM-FILTER-0000000008

""")


def test_named_grouping_is_one_repartition_topic_shared_by_aggregations() -> None:
    # groupBy(.., Grouped.as("zgroup")) names the key selector "zgroup" (burning 1) and the topic; the
    # second aggregation re-burns three values (8-10) but reuses the repartition node
    # (GroupedStreamAggregateBuilder keeps it when the user named the topic).
    builder = StreamsBuilder()
    grouped = builder.stream("in").group_by(lambda k, v: v, name="zgroup")
    grouped.count()
    grouped.reduce(lambda a, b: b, "reduced")
    assert lines(str(builder.build().describe())) == lines("""\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [in])
      --> zgroup
    Processor: zgroup (stores: [])
      --> zgroup-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: zgroup-repartition-filter (stores: [])
      --> zgroup-repartition-sink
      <-- zgroup
    Sink: zgroup-repartition-sink (topic: zgroup-repartition)
      <-- zgroup-repartition-filter

  Sub-topology: 1
    Source: zgroup-repartition-source (topics: [zgroup-repartition])
      --> KSTREAM-AGGREGATE-0000000003, KSTREAM-REDUCE-0000000007
    Processor: KSTREAM-AGGREGATE-0000000003 (stores: [KSTREAM-AGGREGATE-STATE-STORE-0000000002])
      --> none
      <-- zgroup-repartition-source
    Processor: KSTREAM-REDUCE-0000000007 (stores: [reduced])
      --> none
      <-- zgroup-repartition-source

""")


def test_sub_topology_ids_follow_topology_order_not_source_names() -> None:
    # Kafka Streams >= 2.8 numbers node groups in topology order ("zzz" would sort after
    # "KSTREAM-SOURCE-..." by name, as Kafka Streams <= 2.7 did).
    builder = StreamsBuilder()
    builder.stream("x", name="zzz").to("ox")
    builder.stream("y").to("oy")
    assert lines(str(builder.build().describe())) == lines("""\
Topologies:
   Sub-topology: 0
    Source: zzz (topics: [x])
      --> KSTREAM-SINK-0000000001
    Sink: KSTREAM-SINK-0000000001 (topic: ox)
      <-- zzz

  Sub-topology: 1
    Source: KSTREAM-SOURCE-0000000002 (topics: [y])
      --> KSTREAM-SINK-0000000003
    Sink: KSTREAM-SINK-0000000003 (topic: oy)
      <-- KSTREAM-SOURCE-0000000002

""")


def test_multi_topic_source_lists_topics_in_java_hash_set_order() -> None:
    # SourceNodeFactory#describe copies the topics into a java.util.HashSet (String.hashCode buckets).
    builder = StreamsBuilder()
    builder.stream(["topic-b", "topic-a", "c", "alpha", "zeta"]).to("out")
    assert lines(str(builder.build().describe())) == lines("""\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [zeta, c, alpha, topic-a, topic-b])
      --> KSTREAM-SINK-0000000001
    Sink: KSTREAM-SINK-0000000001 (topic: out)
      <-- KSTREAM-SOURCE-0000000000

""")


def test_successor_order_replays_javas_tree_set() -> None:
    # Successor lists are TreeSets ordered by sub-tree size while sizes are still growing, so the source
    # lists MAPVALUES-1 (final size 2) before KEY-SELECT-3 (final size 4): a plain sort would not.
    builder = StreamsBuilder()
    stream = builder.stream("t1")
    stream.map_values(lambda v: v).peek(lambda k, v: None, name="pee0_x")
    stream.select_key(lambda k, v: v).map(lambda k, v: (v, k)).filter(lambda k, v: True).filter(lambda k, v: True)
    assert lines(str(builder.build().describe())) == lines("""\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [t1])
      --> KSTREAM-MAPVALUES-0000000001, KSTREAM-KEY-SELECT-0000000003
    Processor: KSTREAM-KEY-SELECT-0000000003 (stores: [])
      --> KSTREAM-MAP-0000000004
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-MAP-0000000004 (stores: [])
      --> KSTREAM-FILTER-0000000005
      <-- KSTREAM-KEY-SELECT-0000000003
    Processor: KSTREAM-FILTER-0000000005 (stores: [])
      --> KSTREAM-FILTER-0000000006
      <-- KSTREAM-MAP-0000000004
    Processor: KSTREAM-MAPVALUES-0000000001 (stores: [])
      --> pee0_x
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-FILTER-0000000006 (stores: [])
      --> none
      <-- KSTREAM-FILTER-0000000005
    Processor: pee0_x (stores: [])
      --> none
      <-- KSTREAM-MAPVALUES-0000000001

""")


def test_branching_stream() -> None:
    # One stream with five children; nodes by sub-tree size then name, a foreach has no successors.
    builder = StreamsBuilder()
    stream = builder.stream("in")
    stream.filter(lambda k, v: True).to("a")
    stream.map_values(lambda v: v).map_values(lambda v: v).to("b")
    stream.peek(lambda k, v: None).foreach(lambda k, v: None)
    stream.to("c")
    stream.filter_not(lambda k, v: True).select_key(lambda k, v: v).to("d")
    assert lines(str(builder.build().describe())) == lines("""\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [in])
      --> KSTREAM-FILTER-0000000009, KSTREAM-MAPVALUES-0000000003, KSTREAM-FILTER-0000000001, \
KSTREAM-PEEK-0000000006, KSTREAM-SINK-0000000008
    Processor: KSTREAM-FILTER-0000000009 (stores: [])
      --> KSTREAM-KEY-SELECT-0000000010
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-MAPVALUES-0000000003 (stores: [])
      --> KSTREAM-MAPVALUES-0000000004
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-FILTER-0000000001 (stores: [])
      --> KSTREAM-SINK-0000000002
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-KEY-SELECT-0000000010 (stores: [])
      --> KSTREAM-SINK-0000000011
      <-- KSTREAM-FILTER-0000000009
    Processor: KSTREAM-MAPVALUES-0000000004 (stores: [])
      --> KSTREAM-SINK-0000000005
      <-- KSTREAM-MAPVALUES-0000000003
    Processor: KSTREAM-PEEK-0000000006 (stores: [])
      --> KSTREAM-FOREACH-0000000007
      <-- KSTREAM-SOURCE-0000000000
    Processor: KSTREAM-FOREACH-0000000007 (stores: [])
      --> none
      <-- KSTREAM-PEEK-0000000006
    Sink: KSTREAM-SINK-0000000002 (topic: a)
      <-- KSTREAM-FILTER-0000000001
    Sink: KSTREAM-SINK-0000000005 (topic: b)
      <-- KSTREAM-MAPVALUES-0000000004
    Sink: KSTREAM-SINK-0000000008 (topic: c)
      <-- KSTREAM-SOURCE-0000000000
    Sink: KSTREAM-SINK-0000000011 (topic: d)
      <-- KSTREAM-KEY-SELECT-0000000010

""")


def test_two_level_repartition() -> None:
    # A table's stream re-keyed and grouped again: a third sub-topology behind a second repartition topic.
    builder = StreamsBuilder()
    (
        builder.stream("in")
        .group_by(lambda k, v: v)
        .count("first")
        .to_stream()
        .map(lambda k, v: (str(v), k))
        .group_by_key()
        .reduce(lambda a, b: b, "second")
        .to_stream()
        .to("out")
    )
    assert lines(str(builder.build().describe())) == lines("""\
Topologies:
   Sub-topology: 0
    Source: KSTREAM-SOURCE-0000000000 (topics: [in])
      --> KSTREAM-KEY-SELECT-0000000001
    Processor: KSTREAM-KEY-SELECT-0000000001 (stores: [])
      --> first-repartition-filter
      <-- KSTREAM-SOURCE-0000000000
    Processor: first-repartition-filter (stores: [])
      --> first-repartition-sink
      <-- KSTREAM-KEY-SELECT-0000000001
    Sink: first-repartition-sink (topic: first-repartition)
      <-- first-repartition-filter

  Sub-topology: 1
    Source: first-repartition-source (topics: [first-repartition])
      --> KSTREAM-AGGREGATE-0000000002
    Processor: KSTREAM-AGGREGATE-0000000002 (stores: [first])
      --> KTABLE-TOSTREAM-0000000006
      <-- first-repartition-source
    Processor: KTABLE-TOSTREAM-0000000006 (stores: [])
      --> KSTREAM-MAP-0000000007
      <-- KSTREAM-AGGREGATE-0000000002
    Processor: KSTREAM-MAP-0000000007 (stores: [])
      --> second-repartition-filter
      <-- KTABLE-TOSTREAM-0000000006
    Processor: second-repartition-filter (stores: [])
      --> second-repartition-sink
      <-- KSTREAM-MAP-0000000007
    Sink: second-repartition-sink (topic: second-repartition)
      <-- second-repartition-filter

  Sub-topology: 2
    Source: second-repartition-source (topics: [second-repartition])
      --> KSTREAM-REDUCE-0000000008
    Processor: KSTREAM-REDUCE-0000000008 (stores: [second])
      --> KTABLE-TOSTREAM-0000000012
      <-- second-repartition-source
    Processor: KTABLE-TOSTREAM-0000000012 (stores: [])
      --> KSTREAM-SINK-0000000013
      <-- KSTREAM-REDUCE-0000000008
    Sink: KSTREAM-SINK-0000000013 (topic: out)
      <-- KTABLE-TOSTREAM-0000000012

""")


def test_empty_topology() -> None:
    assert str(StreamsBuilder().build().describe()) == "Topologies:\n "


def test_description_objects() -> None:
    description = wordcount_builder().build().describe()
    assert [sub.id for sub in description.subtopologies] == [0, 1]
    source, flat_map, *_ = description.subtopologies[0].nodes
    assert isinstance(source, SourceDescription) and source.topics == ["streams-plaintext-input"]
    assert [n.name for n in source.successors] == ["KSTREAM-FLATMAPVALUES-0000000001"]
    assert [n.name for n in flat_map.predecessors] == ["KSTREAM-SOURCE-0000000000"]
    aggregate = description.subtopologies[1].nodes[1]
    assert isinstance(aggregate, ProcessorDescription) and aggregate.stores == ["counts-store"]
    sink = description.subtopologies[1].nodes[-1]
    assert isinstance(sink, SinkDescription) and sink.topic == "streams-wordcount-output"

"""Source tables and stream-table joins in the topology layer: stores, errors, co-partitioning.

Node names and describe() are checked against Kafka Streams in tests/oracle (topology and semantics);
these tests pin what the oracles cannot see: store specs, internal topics, and the errors.
"""

from __future__ import annotations

import pytest

from streamlet.errors import TopologyError
from streamlet.topology import StreamsBuilder
from streamlet.topology.nodes import ProcessorSpec
from streamlet.topology.suppressed import BufferConfig, Suppressed
from streamlet.topology.windows import TimeWindows


def _join(builder: StreamsBuilder, *, rekey: bool, store: str | None = "customers") -> None:
    customers = builder.table("customers", "str", "str", store)
    orders = builder.stream("orders", "str", "str")
    if rekey:
        orders = orders.select_key(lambda k, v: v)
    orders.join(customers, lambda o, c: f"{o}/{c}").to("enriched", "str", "str")


def test_a_materialized_table_has_a_timestamped_logged_store_and_changelog() -> None:
    builder = StreamsBuilder()
    builder.table("customers", "str", "str", "customers")
    topology = builder.build()
    store = topology.stores["customers"]
    assert store.timestamped and store.logged
    assert topology.changelog_topics() == {"customers": "customers-changelog"}


def test_a_table_without_store_name_is_materialized_only_when_joined() -> None:
    alone = StreamsBuilder()
    alone.table("customers", "str", "str").to_stream().to("out")
    assert dict(alone.build().stores) == {}

    joined = StreamsBuilder()
    _join(joined, rekey=False, store=None)
    topology = joined.build()
    assert list(topology.stores) == ["customers-STATE-STORE-0000000000"]
    join = topology.node("KSTREAM-JOIN-0000000004")
    assert isinstance(join, ProcessorSpec) and join.stores == ("customers-STATE-STORE-0000000000",)
    assert len(topology.subtopologies) == 1  # the store joins the stream's and the table's nodes


def test_join_topics_must_be_co_partitioned() -> None:
    builder = StreamsBuilder()
    _join(builder, rekey=False)
    topology = builder.build()
    assert topology.copartition_groups() == [("orders", "customers")]
    with pytest.raises(TopologyError, match=r"orders \(4 partitions\), customers \(6 partitions\)"):
        topology.internal_topics({"orders": 4, "customers": 6})
    assert {t.name: t.partitions for t in topology.internal_topics({"orders": 6, "customers": 6})} == {
        "customers-changelog": 6
    }


def test_a_rekeyed_stream_is_repartitioned_with_the_table_partition_count() -> None:
    builder = StreamsBuilder()
    _join(builder, rekey=True)
    topology = builder.build()
    counts = {t.name: t.partitions for t in topology.internal_topics({"orders": 12, "customers": 3})}
    assert counts == {"KSTREAM-KEY-SELECT-0000000003-repartition": 3, "customers-changelog": 3}
    assert topology.subtopology_partition_count(0, {"orders": 12, "customers": 3}) == 3


def test_table_and_join_errors() -> None:
    builder = StreamsBuilder()
    counts = builder.stream("words", "str", "str").group_by_key().count("counts")
    table = builder.table("customers", "str", "str")
    orders = builder.stream("orders", "str", "str")
    windowed = builder.stream("clicks", "str", "str").group_by_key().windowed_by(TimeWindows.of_size_with_no_grace(5))
    with pytest.raises(TopologyError, match="windowed table"):
        orders.join(windowed.count(), lambda a, b: a)
    counts.filter(lambda k, v: True)  # an aggregation's table is a table like any other, suppressed too
    counts.suppress(Suppressed.until_time_limit(5, BufferConfig.unbounded())).filter(lambda k, v: True)
    with pytest.raises(TopologyError, match="not an aggregation's table, is not supported yet"):
        table.filter(lambda k, v: True).suppress(Suppressed.until_time_limit(5, BufferConfig.unbounded()))
    with pytest.raises(TopologyError, match="takes a KTable"):
        orders.join(42, lambda a, b: a)  # type: ignore[arg-type]
    with pytest.raises(TopologyError, match="takes JoinWindows"):
        orders.join(orders, lambda a, b: a)  # a stream-stream join needs its windows
    with pytest.raises(TopologyError, match="must be callable"):
        orders.left_join(table, "joiner")  # type: ignore[arg-type]
    with pytest.raises(TopologyError, match="already been registered"):
        builder.table("orders", "str", "str")
    with pytest.raises(TopologyError, match="different StreamsBuilders"):
        StreamsBuilder().stream("x").join(table, lambda a, b: a)


def test_an_aggregation_table_is_joined_through_its_store() -> None:
    builder = StreamsBuilder()
    counts = builder.stream("clicks", "str", "str").group_by(lambda k, v: v).count("per-page")
    builder.stream("views", "str", "str").join(counts, lambda v, n: n).to("out", "str", "int64")
    topology = builder.build()
    assert topology.copartition_groups() == [("views", "per-page-repartition")]
    counts_of = {t.name: t.partitions for t in topology.internal_topics({"clicks": 8, "views": 2})}
    assert counts_of == {"per-page-repartition": 2, "per-page-changelog": 2}


def test_a_materialized_filter_has_its_own_store_which_a_join_reads() -> None:
    builder = StreamsBuilder()
    table = builder.table("customers", "str", "str")
    vip = table.filter(lambda k, v: v.startswith("vip"), store_name="vips")
    builder.stream("orders", "str", "str").join(vip.map_values(str.upper), lambda o, c: c).to("out", "str", "str")
    topology = builder.build()
    assert list(topology.stores) == ["vips"]  # the source stays unmaterialized: the join reads "vips"
    assert topology.stores["vips"].timestamped and topology.changelog_topics() == {"vips": "vips-changelog"}
    join = topology.node("KSTREAM-JOIN-0000000006")
    assert isinstance(join, ProcessorSpec) and join.value_getter is not None
    assert join.value_getter.store == "vips" and [op for op, _ in join.value_getter.steps] == ["table_map_values"]
    with pytest.raises(TopologyError, match="already added"):
        table.filter(lambda k, v: True, store_name="vips")

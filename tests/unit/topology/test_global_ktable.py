"""GlobalKTables in the topology: a global store group without tasks, joins without repartition or
co-partitioning (describe() itself is proven against Kafka Streams in tests/oracle)."""

from __future__ import annotations

import pytest

from streamlet.errors import TopologyError
from streamlet.topology import GlobalKTable, StreamsBuilder


def _enrichment() -> StreamsBuilder:
    builder = StreamsBuilder()
    customers = builder.global_table("customers", "str", "str", store_name="customers")
    orders = builder.stream("orders", "str", "str")
    orders.select_key(lambda k, v: v).join(customers, lambda k, v: k, lambda v, c: c).to("out", "str", "str")
    return builder


def test_the_global_store_takes_an_id_but_no_tasks() -> None:
    topology = _enrichment().build()
    (global_store,) = topology.global_stores
    assert (global_store.id, global_store.store, global_store.topic) == (0, "customers", "customers")
    assert [sub.id for sub in topology.subtopologies] == [1]
    assert topology.global_topics() == ["customers"]
    assert "customers" not in topology.source_topics()
    assert topology.external_source_topics() == ["orders"]


def test_the_global_store_has_no_changelog_and_the_join_no_copartitioning() -> None:
    topology = _enrichment().build()
    assert not topology.stores["customers"].logged
    assert topology.changelog_topics() == {}
    assert topology.copartition_groups() == []
    # the re-keyed stream is not repartitioned for the join
    assert topology.repartition_topics() == []
    assert [t.name for t in topology.internal_topics({"orders": 3})] == []


def test_a_rekeyed_stream_stays_rekeyed_after_a_global_join() -> None:
    builder = StreamsBuilder()
    table = builder.global_table("customers", "str", "str")
    joined = (
        builder.stream("orders", "str", "str")
        .select_key(lambda k, v: v)
        .left_join(table, lambda k, v: k, lambda v, c: c)
    )
    joined.group_by_key().count("counts")
    assert len(builder.build().repartition_topics()) == 1


def test_join_arguments_are_checked() -> None:
    builder = StreamsBuilder()
    table = builder.global_table("customers")
    assert isinstance(table, GlobalKTable) and table.store_name == "customers-STATE-STORE-0000000000"
    stream = builder.stream("orders")
    with pytest.raises(TopologyError, match="key selector and a joiner"):
        stream.join(table, lambda k, v: k)  # type: ignore[call-overload]
    with pytest.raises(TopologyError, match="no key_serde"):
        stream.left_join(table, lambda k, v: k, lambda v, c: c, key_serde="str")  # type: ignore[call-overload]
    with pytest.raises(TopologyError, match="already been registered"):
        builder.global_table("orders")
    other = StreamsBuilder().global_table("x")
    with pytest.raises(TopologyError, match="different StreamsBuilders"):
        stream.join(other, lambda k, v: k, lambda v, c: c)

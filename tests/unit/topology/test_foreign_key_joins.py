"""Foreign-key KTable-KTable joins in the topology: extractor forms, validation, and the partition counts of
their two internal topics (the subscription topic sized like the foreign table, the response topic like the
left table, whose partitions the responses go back to)."""

from __future__ import annotations

from typing import Any

import pytest

import streamlet
from streamlet.errors import TopologyError
from streamlet.topology import StreamsBuilder, TableJoined
from streamlet.topology.foreign_key_joins import key_value_extractor
from streamlet.topology.nodes import SinkSpec
from streamlet.topology.subscription_wrappers import Instruction, SubscriptionResponseWrapper, SubscriptionWrapper

SUBSCRIPTIONS = "KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-0000000006-topic"
RESPONSES = "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-0000000014-topic"


def _fk_join(**kwargs: Any) -> StreamsBuilder:
    builder = StreamsBuilder()
    orders = builder.table("orders", "str", "str")
    customers = builder.table("customers", "str", "str")
    orders.join(customers, lambda v: v.split(":")[0], lambda o, c: f"{o}+{c}", **kwargs).to_stream().to("out")
    return builder


def test_an_extractor_of_one_argument_gets_the_value_and_of_two_the_key_and_value() -> None:
    assert key_value_extractor(lambda v: v + "!")("k", "v") == "v!"
    assert key_value_extractor(lambda k, v: k + v)("k", "v") == "kv"
    assert key_value_extractor(lambda v, default=None: v)("k", "v") == "v"
    assert key_value_extractor(str.upper)("k", "v") == "V"


def test_an_extractor_must_take_the_value_or_the_key_and_value() -> None:
    with pytest.raises(TopologyError, match="foreign_key_extractor must take"):
        key_value_extractor(lambda a, b, c: a)
    builder = StreamsBuilder()
    left, right = builder.table("l"), builder.table("r")
    with pytest.raises(TopologyError, match="foreign_key_extractor must be callable"):
        left.join(right, "not callable", lambda a, b: a)  # type: ignore[call-overload]
    with pytest.raises(TopologyError, match="takes a KTable"):
        left.left_join(builder.stream("s"), lambda v: v, lambda a, b: a)  # type: ignore[call-overload]


def test_a_named_join_names_its_topics_and_store_after_the_name() -> None:
    topology = _fk_join(name="enrich", store_name="enriched").build()
    assert topology.repartition_topics() == [
        "enrich-subscription-registration-topic",
        "enrich-subscription-response-topic",
    ]
    assert {"enrich-subscription-store", "enriched"} <= set(topology.stores)
    with pytest.raises(TopologyError, match="illegal"):
        _fk_join(name="bad name")


def test_the_subscription_topic_is_sized_like_the_foreign_table_and_the_response_topic_like_the_left() -> None:
    topology = _fk_join().build()
    counts = {t.name: t.partitions for t in topology.internal_topics({"orders": 4, "customers": 2})}
    assert counts[SUBSCRIPTIONS] == 2
    assert counts[RESPONSES] == 4
    assert counts["KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-0000000010-changelog"] == 2  # the foreign side's store


def test_responses_go_back_to_the_partition_their_subscription_came_from() -> None:
    topology = _fk_join().build()
    (sink,) = [s for s in topology.nodes if isinstance(s, SinkSpec) and s.topic == RESPONSES]
    assert sink.partitioner is not None
    assert sink.partitioner(RESPONSES, "k", SubscriptionResponseWrapper(None, "v", 3), 4) == 3
    (subscription_sink,) = [s for s in topology.nodes if isinstance(s, SinkSpec) and s.topic == SUBSCRIPTIONS]
    assert subscription_sink.partitioner is None  # the default partitioner, over the foreign key


def test_table_joined_builds_like_kafkas() -> None:
    def by_first_char(topic: str, key: Any, value: Any, num_partitions: int) -> int:
        return ord(key[0]) % num_partitions

    def to_zero(topic: str, key: Any, value: Any, num_partitions: int) -> int:
        return 0

    assert TableJoined.with_(by_first_char, to_zero) == TableJoined(by_first_char, to_zero, None)
    assert TableJoined.as_("enrich") == TableJoined(None, None, "enrich")
    joined = TableJoined.as_("enrich").with_partitioner(to_zero).with_other_partitioner(by_first_char)
    assert joined == TableJoined(to_zero, by_first_char, "enrich")
    assert joined.with_name("other").with_partitioner(None) == TableJoined(None, by_first_char, "other")
    assert streamlet.TableJoined is TableJoined
    with pytest.raises(TopologyError, match="partitioner must be callable"):
        TableJoined.with_(None, "by first char")  # type: ignore[arg-type]
    with pytest.raises(TopologyError, match="illegal"):
        TableJoined.as_("bad name")


def test_table_joined_names_the_join_and_name_is_its_shorthand() -> None:
    named = _fk_join(table_joined=TableJoined.as_("enrich")).build()
    assert str(named.describe()) == str(_fk_join(name="enrich").build().describe())
    assert "enrich-subscription-response-topic" in named.repartition_topics()
    with pytest.raises(TopologyError, match="name='enrich' and table_joined= both given"):
        _fk_join(name="enrich", table_joined=TableJoined.with_(None, None))
    with pytest.raises(TopologyError, match="table_joined must be a TableJoined"):
        _fk_join(table_joined="enrich")
    builder = StreamsBuilder()
    left, right = builder.table("l"), builder.table("r")
    for join in (left.join, left.left_join):
        with pytest.raises(TopologyError, match="table_joined= is for foreign-key joins"):
            join(right, lambda a, b: a, table_joined=TableJoined.as_("x"))


def test_subscriptions_go_by_the_other_partitioner_and_responses_by_the_partitioner_with_no_value() -> None:
    """Kafka's `doJoinOnForeignKey`: `otherPartitioner.partitions(topic, foreignKey, null, n)` places a
    subscription, `partitioner.partitions(topic, key, null, n)` a response (not its primary partition)."""
    calls: list[tuple[str, str, Any, Any, int]] = []

    def recording(which: str, partition: int) -> Any:
        def partitioner(topic: str, key: Any, value: Any, num_partitions: int) -> int:
            calls.append((which, topic, key, value, num_partitions))
            return partition

        return partitioner

    topology = _fk_join(table_joined=TableJoined.with_(recording("orders", 1), recording("customers", 2))).build()
    sinks = {s.topic: s for s in topology.nodes if isinstance(s, SinkSpec)}
    subscription_partitioner, response_partitioner = sinks[SUBSCRIPTIONS].partitioner, sinks[RESPONSES].partitioner
    assert subscription_partitioner is not None and response_partitioner is not None
    subscription = SubscriptionWrapper(None, Instruction.PROPAGATE_ONLY_IF_FK_VAL_AVAILABLE, "o1", 0)
    assert subscription_partitioner("app-subs", "c1", subscription, 3) == 2
    assert response_partitioner("app-responses", "o1", SubscriptionResponseWrapper(None, "v", 3), 4) == 1
    assert calls == [("customers", "app-subs", "c1", None, 3), ("orders", "app-responses", "o1", None, 4)]


def test_a_left_table_read_from_a_repartition_topic_gets_responses_on_as_many_partitions() -> None:
    """Kafka's CopartitionedTopicsEnforcer: a group of repartition topics only (the response topic and the
    left table's repartition topic) is sized like its largest member, so every left partition can be
    answered even when the foreign table has fewer partitions."""
    builder = StreamsBuilder()
    counts = builder.stream("clicks", "str", "str").group_by(lambda k, v: v, name="by-page").count("clicks")
    pages = builder.table("pages", "str", "str")
    counts.join(pages, lambda k, n: k, lambda n, title: f"{title}:{n}").to_stream().to("out")
    topology = builder.build()
    partitions = {t.name: t.partitions for t in topology.internal_topics({"clicks": 6, "pages": 2})}
    assert partitions["by-page-repartition"] == 6
    assert partitions[SUBSCRIPTIONS.replace("0000000006", "0000000009")] == 2
    assert partitions[RESPONSES.replace("0000000014", "0000000017")] == 6

"""Foreign-key KTable-KTable joins in the topology: extractor forms, validation, and the partition counts of
their two internal topics (the subscription topic sized like the foreign table, the response topic like the
left table, whose partitions the responses go back to)."""

from __future__ import annotations

from typing import Any

import pytest

from streamlet.errors import TopologyError
from streamlet.topology import StreamsBuilder
from streamlet.topology.foreign_key_joins import key_value_extractor
from streamlet.topology.nodes import SinkSpec
from streamlet.topology.subscription_wrappers import SubscriptionResponseWrapper

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

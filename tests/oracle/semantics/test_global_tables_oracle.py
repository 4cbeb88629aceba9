"""GlobalKTables and KStream-GlobalKTable joins against Kafka Streams' TopologyTestDriver.

Hand-written cases pin Kafka's null rules (a null value, a key mapped to null, in joins and left joins), the
global store's updates and tombstones, the join keeping the stream's key and timestamp, and a re-keyed stream
that crosses a global join unrepartitioned and is repartitioned by what follows; generated cases
(tests/support/global_table_cases.py) mix them. Both drivers must agree record for record, describe()
included (see test_driver_oracle.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.oracle.semantics.test_driver_oracle import check
from tests.support.global_table_cases import global_table_semantic_cases
from tests.support.semantics_corpus import check_corpus, corpus
from tests.support.semantics_oracle import SemanticsOracle

pytestmark = pytest.mark.oracle


@pytest.fixture(scope="module")
def oracle() -> Iterator[SemanticsOracle]:
    with SemanticsOracle() as jvm:
        yield jvm


def _in(topic: str, *steps: tuple[str | None, str | None, int]) -> list[dict[str, Any]]:
    return [{"topic": topic, "key": k, "value": v, "timestamp": ts} for k, v, ts in steps]


def _orders_customers(join: str, key: str, *, store: str | None = "customers", name: str | None = None) -> list[Any]:
    return [
        {"op": "globalTable", "id": "c", "topic": "customers", "store": store},
        {"op": "stream", "id": "o", "topics": ["orders"]},
        {"op": join, "in": "o", "id": "j", "table": "c", "key": key, "fn": "pair", "name": name},
        {"op": "to", "in": "j", "topic": "out", "vtype": "string"},
    ]


#: orders keyed by order id whose value names the customer: before the customer exists, after, after its
#: tombstone, after an update; a null order key, a null order value, an unknown customer; a global record with
#: a null key; stream timestamps older than the table's
JOIN_INPUTS = [
    *_in("orders", ("o1", "c1", 5)),
    *_in("customers", ("c1", "alice", 30), ("c2", "bob", 4)),
    *_in("orders", ("o2", "c1", 6), ("o3", "c2", 2), (None, "c1", 7), ("o4", None, 8), ("o5", "c9", 9)),
    *_in("customers", ("c1", None, 9), (None, "nobody", 9), ("c3", None, 1)),
    *_in("orders", ("o6", "c1", 10), ("o7", "c2", 1)),
    *_in("customers", ("c2", "bobby", 12)),
    *_in("orders", ("o8", "c2", 12), ("o9", "c2", 3)),
]

#: key selectors that map to null: a null key ("key"), a null value ("value", "first")
NULL_KEY_INPUTS = [
    *_in("customers", ("c1", "alice", 1), ("k", "const", 1), ("a", "first-a", 1)),
    *_in("orders", ("c1", "x", 2), (None, "c1", 3), (None, None, 4), ("c1", None, 5), ("c2", "abc", 6)),
]

HAND_WRITTEN: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    "join": (_orders_customers("globalJoin", "value"), JOIN_INPUTS),
    "left_join": (_orders_customers("globalLeftJoin", "value"), JOIN_INPUTS),
    "join_generated_store_name": (_orders_customers("globalJoin", "value", store=None), JOIN_INPUTS),
    "named_left_join": (_orders_customers("globalLeftJoin", "value", name="enrich"), JOIN_INPUTS),
    "join_on_record_key": (_orders_customers("globalJoin", "key"), NULL_KEY_INPUTS),
    "left_join_on_record_key": (_orders_customers("globalLeftJoin", "key"), NULL_KEY_INPUTS),
    "left_join_on_value": (_orders_customers("globalLeftJoin", "value"), NULL_KEY_INPUTS),
    "left_join_on_first_letter": (_orders_customers("globalLeftJoin", "first"), NULL_KEY_INPUTS),
    "join_on_constant": (_orders_customers("globalJoin", "const"), NULL_KEY_INPUTS),
    # a stream written to the global table's topic updates the table (the driver reads its own output)
    "stream_written_to_the_global_topic": (
        [
            {"op": "globalTable", "id": "c", "topic": "customers", "store": "customers"},
            {"op": "stream", "id": "u", "topics": ["customer-updates"]},
            {"op": "mapValues", "in": "u", "id": "m", "fn": "upper"},
            {"op": "to", "in": "m", "topic": "customers", "vtype": "string"},
            *_orders_customers("globalLeftJoin", "value")[1:],
        ],
        [
            *_in("orders", ("o1", "c1", 1)),
            *_in("customer-updates", ("c1", "alice", 2)),
            *_in("orders", ("o2", "c1", 3)),
            *_in("customers", ("c1", "bob", 4)),
            *_in("orders", ("o3", "c1", 5)),
        ],
    ),
    # a re-keyed stream is joined as it is, then repartitioned by the aggregation after the join; two global
    # tables joined in a row; the global topic read by no one else
    "rekeyed_join_then_count_and_second_global_join": (
        [
            {"op": "globalTable", "id": "c", "topic": "customers", "store": None, "name": "cust"},
            {"op": "globalTable", "id": "r", "topic": "regions", "store": "regions"},
            {"op": "stream", "id": "o", "topics": ["orders"]},
            {"op": "selectKey", "in": "o", "id": "k", "fn": "first"},
            {"op": "globalLeftJoin", "in": "k", "id": "j", "table": "c", "key": "key", "fn": "pair"},
            {"op": "globalJoin", "in": "j", "id": "j2", "table": "r", "key": "first", "fn": "pair", "name": "rj"},
            {"op": "groupByKey", "in": "j", "id": "g", "vtype": "string"},
            {"op": "count", "in": "g", "id": "n", "store": "per-letter"},
            {"op": "toStream", "in": "n", "id": "ns"},
            {"op": "to", "in": "ns", "topic": "counts", "vtype": "long"},
            {"op": "to", "in": "j2", "topic": "out", "vtype": "string"},
        ],
        [
            *_in("customers", ("a", "alice", 1), ("b", "bob", 2)),
            *_in("regions", ("a", "north", 1), ("b", "south", 1)),
            *_in("orders", ("x", "ab", 3), ("y", "ba", 4), (None, "c", 5), ("z", "abc", 6), ("w", None, 7)),
            *_in("regions", ("a", None, 8)),
            *_in("orders", ("v", "a", 9)),
        ],
    ),
}


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
@pytest.mark.parametrize("cache", [0, 10 * 1024 * 1024])
def test_global_table_cases_match_kafka_streams(oracle: SemanticsOracle, name: str, cache: int) -> None:
    program, inputs = HAND_WRITTEN[name]
    check(oracle, {"program": program, "inputs": inputs, "config": {"statestore_cache_max_bytes": cache}})


def test_generated_global_table_cases_match_kafka_streams(oracle: SemanticsOracle) -> None:
    check_corpus(oracle, corpus("global-tables", global_table_semantic_cases()))

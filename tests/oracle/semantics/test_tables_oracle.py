"""Source KTables, KTable operations and KStream-KTable joins against Kafka Streams' TopologyTestDriver.

Hand-written cases pin every null and ordering edge of tables and joins; generated cases
(tests/support/table_cases.py) mix them with the stream operations. Both run on Kafka Streams (KAFKA_VERSION) and on
streamlet and must agree record for record, describe() included (see test_driver_oracle.py).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.oracle.semantics.test_driver_oracle import check
from tests.support.semantics_corpus import check_corpus, corpus
from tests.support.semantics_oracle import SemanticsOracle
from tests.support.table_cases import table_semantic_cases

pytestmark = pytest.mark.oracle

NO_CACHE = {"statestore_cache_max_bytes": 0}


@pytest.fixture(scope="module")
def oracle() -> Iterator[SemanticsOracle]:
    with SemanticsOracle() as jvm:
        yield jvm


def _in(topic: str, *steps: tuple[str | None, str | None, int]) -> list[dict[str, Any]]:
    return [{"topic": topic, "key": k, "value": v, "timestamp": ts} for k, v, ts in steps]


def _orders_customers(join: str, *, store: str | None = "customers", name: str | None = None) -> list[dict[str, Any]]:
    return [
        {"op": "table", "id": "c", "topic": "customers", "store": store},
        {"op": "stream", "id": "o", "topics": ["orders"]},
        {"op": join, "in": "o", "id": "j", "table": "c", "fn": "pair", "name": name},
        {"op": "to", "in": "j", "topic": "out", "vtype": "string"},
    ]


#: stream records before the table has the key, after, after a tombstone; a null stream key; a null value
JOIN_INPUTS = [
    *_in("orders", ("c1", "o1", 5)),
    *_in("customers", ("c1", "alice", 3), ("c2", "bob", 4)),
    *_in("orders", ("c1", "o2", 6), ("c2", "o3", 2), (None, "o4", 7), ("c1", None, 8)),
    *_in("customers", ("c1", None, 9), (None, "nobody", 9)),
    *_in("orders", ("c1", "o5", 10), ("c3", "o6", 11), ("c2", "o7", 1)),
    *_in("customers", ("c2", "bobby", 12)),
    *_in("orders", ("c2", "o8", 12)),
]

#: table updates: new keys, an update, a delete, a delete of an absent key, a null key, out-of-order updates
TABLE_INPUTS = _in(
    "tin",
    ("a", "x", 5),
    ("b", "ab", 6),
    ("a", "abc", 7),
    ("a", None, 8),
    ("z", None, 9),
    (None, "a", 10),
    ("b", "b", 3),
    ("b", "ba", 11),
)


def _table(*ops: dict[str, Any], store: str | None = "tstore") -> list[dict[str, Any]]:
    return [{"op": "table", "id": "t", "topic": "tin", "store": store}, *ops]


TO_STREAM = [{"op": "toStream", "in": "f", "id": "s"}, {"op": "to", "in": "s", "topic": "out", "vtype": "string"}]

HAND_WRITTEN: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    "join": (_orders_customers("join"), JOIN_INPUTS),
    "left_join": (_orders_customers("leftJoin"), JOIN_INPUTS),
    # joining a table read without a store name materializes it under its generated name
    "join_unmaterialized_table": (_orders_customers("join", store=None), JOIN_INPUTS),
    "named_left_join": (_orders_customers("leftJoin", name="enrich"), JOIN_INPUTS),
    # the table itself: updates, tombstones (a delete of an absent key is not emitted with a cache), old values
    "table_to_stream": (
        _table({"op": "toStream", "in": "t", "id": "s"}, {"op": "to", "in": "s", "topic": "out", "vtype": "string"}),
        TABLE_INPUTS,
    ),
    "unmaterialized_table_to_stream": (
        _table(
            {"op": "toStream", "in": "t", "id": "s"},
            {"op": "to", "in": "s", "topic": "out", "vtype": "string"},
            store=None,
        ),
        TABLE_INPUTS,
    ),
    # a filter of a materialized table gets old values: no tombstone for a row that was never in the filter
    "filter_materialized": (_table({"op": "filter", "in": "t", "id": "f", "fn": "has_a"}, *TO_STREAM), TABLE_INPUTS),
    # without a store, the filter cannot tell: every filtered-out row is forwarded as a tombstone
    "filter_unmaterialized": (
        _table({"op": "filterNot", "in": "t", "id": "f", "fn": "has_a"}, *TO_STREAM, store=None),
        TABLE_INPUTS,
    ),
    "map_values_then_filter": (
        _table(
            {"op": "mapValues", "in": "t", "id": "m", "fn": "length"},
            {"op": "filter", "in": "m", "id": "f", "fn": "even"},
            {"op": "toStream", "in": "f", "id": "s"},
            {"op": "to", "in": "s", "topic": "out", "vtype": "long"},
        ),
        TABLE_INPUTS,
    ),
    # a join reads through the table's filter and mapValues (the value getter), not the raw store
    "join_filtered_mapped_table": (
        [
            {"op": "table", "id": "c", "topic": "customers", "store": None},
            {"op": "filter", "in": "c", "id": "f", "fn": "short"},
            {"op": "mapValues", "in": "f", "id": "m", "fn": "upper"},
            {"op": "stream", "id": "o", "topics": ["orders"]},
            {"op": "leftJoin", "in": "o", "id": "j", "table": "m", "fn": "pair"},
            {"op": "to", "in": "j", "topic": "out", "vtype": "string"},
            {"op": "toStream", "in": "f", "id": "fs"},
            {"op": "to", "in": "fs", "topic": "filtered", "vtype": "string"},
        ],
        [*JOIN_INPUTS, *_in("customers", ("c3", "carolyn", 13)), *_in("orders", ("c3", "o9", 14))],
    ),
    # a re-keyed stream is repartitioned before the join (topic named after the key-selecting node)
    "join_after_select_key": (
        [
            {"op": "table", "id": "c", "topic": "customers", "store": "customers"},
            {"op": "stream", "id": "o", "topics": ["orders"]},
            {"op": "selectKey", "in": "o", "id": "k", "fn": "first"},
            {"op": "join", "in": "k", "id": "j", "table": "c", "fn": "pair"},
            {"op": "to", "in": "j", "topic": "out", "vtype": "string"},
        ],
        [*_in("customers", ("a", "alice", 1), ("b", "bob", 2)), *_in("orders", ("x", "ab", 3), (None, "b", 4))],
    ),
    # a named join names the repartition topic; the same stream joined twice
    "named_join_after_map_and_second_join": (
        [
            {"op": "table", "id": "c", "topic": "customers", "store": None},
            {"op": "stream", "id": "o", "topics": ["orders"]},
            {"op": "map", "in": "o", "id": "k", "fn": "swap"},
            {"op": "join", "in": "k", "id": "j", "table": "c", "fn": "pair", "name": "by-value"},
            {"op": "leftJoin", "in": "k", "id": "l", "table": "c", "fn": "pair"},
            {"op": "to", "in": "j", "topic": "out", "vtype": "string"},
            {"op": "to", "in": "l", "topic": "out2", "vtype": "string"},
        ],
        [
            *_in("customers", ("o1", "x", 1)),
            *_in("orders", ("k", "o1", 3), ("j", "o2", 4), (None, "o1", 5), ("n", None, 6)),
        ],
    ),
    # a materialized filter of an unmaterialized table: its store suppresses deletes of keys it never held
    "materialized_filter": (
        _table(
            {"op": "filterNot", "in": "t", "id": "f", "fn": "has_a", "store": "kept", "vtype": "string"},
            *TO_STREAM,
            store=None,
        ),
        TABLE_INPUTS,
    ),
    # a join reads a materialized mapValues from its own store; a filter after it gets old values from it
    "join_materialized_map_values": (
        [
            {"op": "table", "id": "c", "topic": "customers", "store": None},
            {"op": "mapValues", "in": "c", "id": "m", "fn": "length", "store": "lengths", "vtype": "long"},
            {"op": "filter", "in": "m", "id": "f", "fn": "even"},
            {"op": "stream", "id": "o", "topics": ["orders"]},
            {"op": "leftJoin", "in": "o", "id": "j", "table": "m", "fn": "pair"},
            {"op": "to", "in": "j", "topic": "out", "vtype": "string"},
            {"op": "toStream", "in": "f", "id": "fs"},
            {"op": "to", "in": "fs", "topic": "even", "vtype": "long"},
        ],
        JOIN_INPUTS,
    ),
    # a stream joined with an aggregation's table reads its store (the counts of the other stream so far)
    "join_count_table": (
        [
            {"op": "stream", "id": "c", "topics": ["clicks"]},
            {"op": "groupBy", "in": "c", "id": "g", "fn": "value", "vtype": "string"},
            {"op": "count", "in": "g", "id": "n", "store": "clicks-per-page"},
            {"op": "stream", "id": "v", "topics": ["views"]},
            {"op": "leftJoin", "in": "v", "id": "j", "table": "n", "fn": "pair"},
            {"op": "to", "in": "j", "topic": "out", "vtype": "string"},
        ],
        [
            *_in("views", ("p1", "v1", 1)),
            *_in("clicks", ("u1", "p1", 2), ("u2", "p1", 3), ("u1", "p2", 4)),
            *_in("views", ("p1", "v2", 5), ("p2", "v3", 6), ("p3", "v4", 7)),
        ],
    ),
}

HAND_WRITTEN["join_without_cache"] = HAND_WRITTEN["join"]
HAND_WRITTEN["table_to_stream_without_cache"] = HAND_WRITTEN["table_to_stream"]
HAND_WRITTEN["filter_materialized_without_cache"] = HAND_WRITTEN["filter_materialized"]
HAND_WRITTEN["materialized_filter_without_cache"] = HAND_WRITTEN["materialized_filter"]

CONFIGS = {name: NO_CACHE for name in HAND_WRITTEN if name.endswith("_without_cache")}


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_table_and_join_cases_match_kafka_streams(oracle: SemanticsOracle, name: str) -> None:
    program, inputs = HAND_WRITTEN[name]
    check(oracle, {"program": program, "inputs": inputs, "config": CONFIGS.get(name, {})})


def test_generated_table_cases_match_kafka_streams(oracle: SemanticsOracle) -> None:
    check_corpus(oracle, corpus("tables", table_semantic_cases()))

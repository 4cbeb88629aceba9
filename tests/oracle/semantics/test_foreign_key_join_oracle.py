"""Foreign-key KTable-KTable joins (KIP-213) against Kafka Streams' TopologyTestDriver, record for record.

Left rows are `"<foreign key>:<text>"` ("prefix" extracts the foreign key; a value without ':' has none, and
"key_or_prefix", a (key, value) extractor, then uses the row's key). Hand-written cases: a foreign key
changing (the old subscription is deleted), becoming None and coming back, inner vs left, a foreign update
fanning out to several primary keys, foreign deletes, left deletes and deletes of absent keys, null keys,
out-of-order timestamps (the result takes the larger), named and materialized joins, and a join result
re-grouped (old values through the join's table source).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.oracle.semantics.test_driver_oracle import check
from tests.oracle.semantics.test_tables_oracle import NO_CACHE, _in
from tests.support.semantics_oracle import SemanticsOracle

pytestmark = pytest.mark.oracle


@pytest.fixture(scope="module")
def oracle() -> Iterator[SemanticsOracle]:
    with SemanticsOracle() as jvm:
        yield jvm


# k1, k2, k3 subscribe to "a"; k1 moves to "b", loses its foreign key, gets it back; "a" changes and goes
EDGES = [
    *_in("left", ("k1", "a:one", 5), ("k2", "a:two", 6)),
    *_in("right", ("a", "A1", 3), ("b", "B1", 8)),
    *_in("left", ("k3", "a:three", 2), ("k4", "c:four", 9), ("k5", "nofk", 4)),
    *_in("right", ("a", "A2", 10)),  # fans out to k1, k2, k3
    *_in("left", ("k1", "b:one", 11)),  # foreign key change: unsubscribes from "a"
    *_in("right", ("a", "A3", 1), ("c", "C1", 12)),  # k1 no longer sees "a"; k4 finds "c"
    *_in("left", ("k1", "plain", 13), ("k1", "b:again", 7), ("k2", "a:two", 14)),  # fk None and back; same value
    *_in("right", ("b", None, 15), ("zz", None, 16), (None, "orphan", 17)),  # foreign delete, absent, null key
    *_in("left", ("k3", None, 18), ("k9", None, 19), (None, "a:x", 20)),  # left delete, absent delete, null key
    *_in("right", ("a", None, 21), ("b", "B2", 22), ("a", "A4", 23)),
    *_in("left", ("k4", "a:four", 24), ("k5", "b:five", 25)),
]


def _fk_join(
    kind: str,
    *after: dict[str, Any],
    fk: str = "prefix",
    left_store: str | None = None,
    right_store: str | None = None,
    name: str | None = None,
    store: str | None = None,
) -> list[dict[str, Any]]:
    return [
        {"op": "table", "id": "l", "topic": "left", "store": left_store},
        {"op": "table", "id": "r", "topic": "right", "store": right_store},
        {"op": kind, "in": "l", "id": "j", "table": "r", "fk": fk, "fn": "pair", "name": name, "store": store},
        *(
            after
            or [{"op": "toStream", "in": "j", "id": "s"}, {"op": "to", "in": "s", "topic": "out", "vtype": "string"}]
        ),
    ]


HAND_WRITTEN: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    "inner": (_fk_join("join"), EDGES),
    "left": (_fk_join("leftJoin"), EDGES),
    "inner_by_key_and_value": (_fk_join("join", fk="key_or_prefix"), EDGES),
    "left_by_key_and_value": (_fk_join("leftJoin", fk="key_or_prefix"), EDGES),
    "named_materialized_inner_of_stored_tables": (
        _fk_join("join", left_store="ls", right_store="rs", name="fk", store="joined"),
        EDGES,
    ),
    "materialized_left": (_fk_join("leftJoin", store="joined"), EDGES),
    # old values through the join (from its store, which needs a value serde): re-grouped and counted
    "left_regrouped": (
        _fk_join(
            "leftJoin",
            {"op": "groupBy", "in": "j", "id": "g", "fn": "first", "vtype": "string"},
            {"op": "count", "in": "g", "id": "n", "store": None},
            {"op": "toStream", "in": "n", "id": "s"},
            {"op": "to", "in": "s", "topic": "out", "vtype": "long"},
            store="joined",
        ),
        EDGES,
    ),
    # the foreign table is a filtered table: its value getter applies the filter
    "inner_with_a_filtered_foreign_table": (
        [
            {"op": "table", "id": "l", "topic": "left", "store": None},
            {"op": "table", "id": "r0", "topic": "right", "store": None},
            {"op": "filter", "in": "r0", "id": "r", "fn": "short"},
            {"op": "join", "in": "l", "id": "j", "table": "r", "fk": "prefix", "fn": "pair"},
            {"op": "toStream", "in": "j", "id": "s"},
            {"op": "to", "in": "s", "topic": "out", "vtype": "string"},
        ],
        [*EDGES, *_in("right", ("a", "A-very-long-value", 30), ("a", "A5", 31))],
    ),
    # aggregations on either side: the left side a reduce of a stream (first words name the foreign key), the
    # foreign side a count of a stream (its updates reach the join as Change(new, old) of plain aggregates)
    "left_join_of_aggregations": (
        [
            {"op": "stream", "id": "o", "topics": ["orders"]},
            {"op": "groupByKey", "in": "o", "id": "og", "vtype": "string"},
            {"op": "reduce", "in": "og", "id": "l", "fn": "concat", "vtype": "string", "store": None},
            {"op": "stream", "id": "c", "topics": ["clicks"]},
            {"op": "groupByKey", "in": "c", "id": "cg", "vtype": "string"},
            {"op": "count", "in": "cg", "id": "r", "store": "clicks"},
            {"op": "leftJoin", "in": "l", "id": "j", "table": "r", "fk": "first_word", "fn": "pair"},
            {"op": "toStream", "in": "j", "id": "s"},
            {"op": "to", "in": "s", "topic": "out", "vtype": "string"},
        ],
        [
            *_in("orders", ("o1", "a", 5), ("o2", "b", 6), ("o4", "x", 7)),
            *_in("clicks", ("a", "c", 1), ("b", "c", 8), ("a", "c", 9), ("x", "c", 3)),
            *_in("orders", ("o3", "", 10), ("o2", "a", 11), ("o5", "a", 12), (None, "a", 13)),  # o2: "b" -> "ba"
            *_in("clicks", ("a", "c", 14), ("ba", "c", 2), ("b", None, 15)),
        ],
    ),
}

for _name in (
    "inner",
    "left",
    "left_regrouped",
    "named_materialized_inner_of_stored_tables",
    "left_join_of_aggregations",
):
    HAND_WRITTEN[_name + "_without_cache"] = HAND_WRITTEN[_name]


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_foreign_key_joins_match_kafka_streams(oracle: SemanticsOracle, name: str) -> None:
    program, inputs = HAND_WRITTEN[name]
    config = NO_CACHE if name.endswith("_without_cache") else {}
    check(oracle, {"program": program, "inputs": inputs, "config": config})

"""KTable-KTable join / left_join / outer_join against Kafka Streams' TopologyTestDriver, record for record.

Hand-written cases: a key on one side before the other, updates and deletes on either side, a delete of an
absent key, null keys, timestamps out of order (the result takes the larger of both sides'), tables with and
without stores, and join results filtered and re-grouped (old values through the join).
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


BOTH_SIDES = [
    *_in("left", ("a", "l1", 5)),
    *_in("right", ("a", "r1", 3), ("b", "r2", 8)),
    *_in("left", ("b", "l2", 2), ("a", "l3", 9), ("c", "l4", 4)),
    *_in("right", ("a", None, 10), ("z", None, 11), (None, "rx", 12)),
    *_in("left", ("a", "l5", 1), ("b", None, 13), (None, "lx", 14)),
    *_in("right", ("a", "r3", 6), ("c", "r4", 15), ("b", "r5", 16)),
    *_in("left", ("c", None, 17), ("b", "l6", 7)),
]


def _join(
    kind: str,
    *after: dict[str, Any],
    left_store: str | None = None,
    right_store: str | None = "rs",
    name: str | None = None,
    store: str | None = None,
) -> list[dict[str, Any]]:
    return [
        {"op": "table", "id": "l", "topic": "left", "store": left_store},
        {"op": "table", "id": "r", "topic": "right", "store": right_store},
        {"op": kind, "in": "l", "id": "j", "table": "r", "fn": "pair", "name": name, "store": store},
        *(
            after
            or [{"op": "toStream", "in": "j", "id": "s"}, {"op": "to", "in": "s", "topic": "out", "vtype": "string"}]
        ),
    ]


HAND_WRITTEN: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    "inner_join": (_join("join"), BOTH_SIDES),
    "left_join": (_join("leftJoin"), BOTH_SIDES),
    "outer_join": (_join("outerJoin"), BOTH_SIDES),
    "named_outer_join_of_stored_tables": (_join("outerJoin", left_store="ls", name="both"), BOTH_SIDES),
    # old values through the join: a filter of the result, and the result re-grouped and counted
    "filtered_left_join": (
        _join(
            "leftJoin",
            {"op": "filter", "in": "j", "id": "f", "fn": "has_a"},
            {"op": "toStream", "in": "f", "id": "s"},
            {"op": "to", "in": "s", "topic": "out", "vtype": "string"},
        ),
        [*BOTH_SIDES, *_in("right", ("a", "ra", 20), ("a", "rb", 21))],
    ),
    "outer_join_regrouped": (
        _join(
            "outerJoin",
            {"op": "groupBy", "in": "j", "id": "g", "fn": "first", "vtype": "string"},
            {"op": "count", "in": "g", "id": "n", "store": None},
            {"op": "toStream", "in": "n", "id": "s"},
            {"op": "to", "in": "s", "topic": "out", "vtype": "long"},
        ),
        BOTH_SIDES,
    ),
    # a table joined with an aggregation's table
    "join_with_a_count": (
        [
            {"op": "table", "id": "l", "topic": "left", "store": None},
            {"op": "stream", "id": "s", "topics": ["clicks"]},
            {"op": "groupByKey", "in": "s", "id": "g", "vtype": "string"},
            {"op": "reduce", "in": "g", "id": "r", "fn": "concat", "vtype": "string", "store": None},
            {"op": "leftJoin", "in": "l", "id": "j", "table": "r", "fn": "pair"},
            {"op": "toStream", "in": "j", "id": "js"},
            {"op": "to", "in": "js", "topic": "out", "vtype": "string"},
        ],
        [*_in("left", ("a", "l1", 5), ("b", "l2", 6)), *_in("clicks", ("a", "x", 7), ("a", "y", 2), ("c", "z", 9))],
    ),
    # materialized: the result's store forwards (old values from it), and a stream join reads it
    "materialized_left_join_read_by_a_stream": (
        [
            {"op": "table", "id": "l", "topic": "left", "store": None},
            {"op": "table", "id": "r", "topic": "right", "store": None},
            {"op": "leftJoin", "in": "l", "id": "j", "table": "r", "fn": "pair", "store": "joined"},
            {"op": "filter", "in": "j", "id": "f", "fn": "has_a"},
            {"op": "toStream", "in": "f", "id": "fs"},
            {"op": "to", "in": "fs", "topic": "out", "vtype": "string"},
            {"op": "stream", "id": "o", "topics": ["orders"]},
            {"op": "join", "in": "o", "id": "oj", "table": "j", "fn": "pair"},
            {"op": "to", "in": "oj", "topic": "enriched", "vtype": "string"},
        ],
        [*BOTH_SIDES, *_in("right", ("a", "ra", 20)), *_in("orders", ("a", "o1", 21), ("b", "o2", 3), ("c", "o3", 22))],
    ),
    "materialized_named_outer_join": (_join("outerJoin", name="oj", store="outer"), BOTH_SIDES),
    # a materialized self-join re-grouped: written through (no cache), the old value is the join's, not the store's
    "materialized_self_join_regrouped": (
        [
            {"op": "table", "id": "t", "topic": "left", "store": None},
            {"op": "join", "in": "t", "id": "j", "table": "t", "fn": "pair", "store": "self"},
            {"op": "groupBy", "in": "j", "id": "g", "fn": "key", "vtype": "string"},
            {"op": "count", "in": "g", "id": "n", "store": None},
            {"op": "toStream", "in": "n", "id": "s"},
            {"op": "to", "in": "s", "topic": "out", "vtype": "long"},
        ],
        [step for step in BOTH_SIDES if step["topic"] == "left"],
    ),
    "materialized_inner_join": (_join("join", store="inner"), BOTH_SIDES),
}

# unmaterialized join results read by joins: Kafka's join value getter joins both tables' values on the fly
THIRD = _in("third", ("a", "t1", 18), ("b", "t2", 4), ("c", "t3", 19), ("z", "t4", 20))
LATE_ORDERS = _in("orders", ("a", "o1", 21), ("b", "o2", 3), ("c", "o3", 22), ("z", "o4", 23), (None, "o5", 24))
for _kind in ("join", "leftJoin", "outerJoin"):
    # a stream reads the join, through a filter and a mapValues
    HAND_WRITTEN[f"unmaterialized_{_kind}_read_by_a_stream"] = (
        _join(
            _kind,
            {"op": "filter", "in": "j", "id": "f", "fn": "has_a"},
            {"op": "mapValues", "in": "f", "id": "m", "fn": "upper"},
            {"op": "stream", "id": "o", "topics": ["orders"]},
            {"op": "leftJoin", "in": "o", "id": "oj", "table": "m", "fn": "pair"},
            {"op": "to", "in": "oj", "topic": "enriched", "vtype": "string"},
            {"op": "join", "in": "o", "id": "oi", "table": "j", "fn": "pair"},
            {"op": "to", "in": "oi", "topic": "inner", "vtype": "string"},
        ),
        [*BOTH_SIDES, *LATE_ORDERS, *_in("right", ("a", "ra", 25)), *_in("orders", ("a", "o6", 26))],
    )
    # a table joins the join's result, on either side, and the result of that is read by a stream
    HAND_WRITTEN[f"unmaterialized_{_kind}_joined_by_tables"] = (
        _join(
            _kind,
            {"op": "table", "id": "t", "topic": "third", "store": None},
            {"op": "leftJoin", "in": "j", "id": "jt", "table": "t", "fn": "pair"},
            {"op": "outerJoin", "in": "t", "id": "tj", "table": "j", "fn": "pair"},
            {"op": "toStream", "in": "jt", "id": "s1"},
            {"op": "to", "in": "s1", "topic": "out", "vtype": "string"},
            {"op": "toStream", "in": "tj", "id": "s2"},
            {"op": "to", "in": "s2", "topic": "out2", "vtype": "string"},
            {"op": "stream", "id": "o", "topics": ["orders"]},
            {"op": "leftJoin", "in": "o", "id": "oj", "table": "jt", "fn": "pair"},
            {"op": "to", "in": "oj", "topic": "enriched", "vtype": "string"},
        ),
        [*THIRD[:2], *BOTH_SIDES, *THIRD[2:], *LATE_ORDERS],
    )
    HAND_WRITTEN[f"unmaterialized_{_kind}_read_by_a_stream_without_cache"] = HAND_WRITTEN[
        f"unmaterialized_{_kind}_read_by_a_stream"
    ]

for _name in (
    "inner_join",
    "left_join",
    "outer_join",
    "filtered_left_join",
    "outer_join_regrouped",
    "materialized_left_join_read_by_a_stream",
    "materialized_named_outer_join",
    "materialized_inner_join",
    "materialized_self_join_regrouped",
):
    HAND_WRITTEN[_name + "_without_cache"] = HAND_WRITTEN[_name]


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_table_table_joins_match_kafka_streams(oracle: SemanticsOracle, name: str) -> None:
    program, inputs = HAND_WRITTEN[name]
    config = NO_CACHE if name.endswith("_without_cache") else {}
    check(oracle, {"program": program, "inputs": inputs, "config": config})

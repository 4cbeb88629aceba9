"""KTable group_by and the grouped table's count / reduce / aggregate against Kafka Streams' TopologyTestDriver.

Hand-written cases pin the edges of re-grouping a table: a row moving between groups (subtract, then add),
staying in its group (one change with both values), leaving every group (a delete, a null selected key),
out-of-order updates, a source table materialized only because the grouping needs its old values, and the
repartition topic's bytes (Kafka's Change serde). Generated cases are in test_tables_oracle.py.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.oracle.semantics.test_driver_oracle import check
from tests.oracle.semantics.test_tables_oracle import JOIN_INPUTS, NO_CACHE, TABLE_INPUTS, _in
from tests.support.semantics_oracle import SemanticsOracle

pytestmark = pytest.mark.oracle


@pytest.fixture(scope="module")
def oracle() -> Iterator[SemanticsOracle]:
    with SemanticsOracle() as jvm:
        yield jvm


#: rows moving between groups of their first letter, staying in one, leaving (delete), re-entering, a delete
#: of an absent key, a null key, and an update older than the aggregate
MOVES = _in(
    "tin",
    ("r1", "apple", 5),
    ("r2", "avocado", 6),
    ("r3", "banana", 7),
    ("r1", "blueberry", 8),
    ("r2", "apricot", 9),
    ("r3", None, 10),
    ("r9", None, 11),
    (None, "cherry", 12),
    ("r3", "cherry", 2),
    ("r1", "ab", 13),
    ("r4", "abc", 3),
)


def _grouped(
    selector: str, *aggregations: dict[str, Any], store: str | None = "tstore", vtype: str = "string", name=None
) -> list[dict[str, Any]]:
    program: list[dict[str, Any]] = [
        {"op": "table", "id": "t", "topic": "tin", "store": store},
        {"op": "groupBy", "in": "t", "id": "g", "fn": selector, "vtype": vtype, "name": name},
    ]
    for i, aggregation in enumerate(aggregations):
        out_type = aggregation.pop("out", "long")
        program += [
            {"in": "g", "id": f"a{i}", **aggregation},
            {"op": "toStream", "in": f"a{i}", "id": f"s{i}"},
            {"op": "to", "in": f"s{i}", "topic": f"out{i}", "vtype": out_type},
        ]
    return program


def _count(**extra: Any) -> dict[str, Any]:
    return {"op": "count", "store": None, **extra}


HAND_WRITTEN: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    "count_by_first_letter": (_grouped("first", _count()), MOVES),
    # the source table has no store name: the grouping materializes it under its generated name
    "count_of_unmaterialized_table": (_grouped("first", _count(store="counts"), store=None), MOVES),
    # every row in one group: an update is one change with both values (KIP-904), a delete only subtracts
    "count_one_group": (_grouped("const", _count()), MOVES),
    # a null selected key takes the row out of every group, as a delete does
    "count_long_words_only": (_grouped("long_only", _count()), [*MOVES, *TABLE_INPUTS]),
    "reduce_concat_remove": (
        _grouped("first", {"op": "reduce", "fn": "concat", "sub": "remove", "store": None, "out": "string"}),
        MOVES,
    ),
    "aggregate_lengths": (
        _grouped("swap", {"op": "aggregate", "fn": "len_sum", "sub": "len_sub", "vtype": "long", "store": None}),
        MOVES,
    ),
    # a named grouping: one repartition topic shared by both aggregations; named aggregations' sink and source
    "named_grouping_shared_by_two_aggregations": (
        _grouped(
            "first",
            _count(name="counted"),
            {
                "op": "aggregate",
                "fn": "append",
                "sub": "remove",
                "vtype": "string",
                "store": "appended",
                "out": "string",
            },
            name="by-letter",
        ),
        MOVES,
    ),
    # unnamed: each aggregation has its own repartition topic, named after its store
    "two_aggregations_two_topics": (
        _grouped("first", _count(), {"op": "reduce", "fn": "max", "sub": "remove", "store": "m", "out": "string"}),
        MOVES,
    ),
    # grouping a filter (not materialized) and a mapValues: old values come through them from the source
    "group_filtered_lengths_by_parity": (
        [
            {"op": "table", "id": "t", "topic": "tin", "store": None},
            {"op": "filter", "in": "t", "id": "f", "fn": "has_a"},
            {"op": "mapValues", "in": "f", "id": "m", "fn": "length"},
            {"op": "groupBy", "in": "m", "id": "g", "fn": "parity", "vtype": "long"},
            {"op": "reduce", "in": "g", "id": "r", "fn": "sum", "sub": "minus", "vtype": "long", "store": None},
            {"op": "toStream", "in": "r", "id": "s"},
            {"op": "to", "in": "s", "topic": "out", "vtype": "long"},
        ],
        [*MOVES, *TABLE_INPUTS],
    ),
    # a stream joined with a grouped table's count reads its store
    "join_with_grouped_count": (
        [
            {"op": "table", "id": "c", "topic": "customers", "store": None},
            {"op": "groupBy", "in": "c", "id": "g", "fn": "swap", "vtype": "string"},
            {"op": "count", "in": "g", "id": "n", "store": "per-name"},
            {"op": "stream", "id": "o", "topics": ["orders"]},
            {"op": "mapValues", "in": "o", "id": "ov", "fn": "upper"},
            {"op": "selectKey", "in": "o", "id": "k", "fn": "value"},
            {"op": "leftJoin", "in": "k", "id": "j", "table": "n", "fn": "pair"},
            {"op": "to", "in": "j", "topic": "out", "vtype": "string"},
        ],
        [*JOIN_INPUTS, *_in("orders", ("x", "alice", 20), ("y", "bobby", 21), ("z", "c1", 22))],
    ),
}

for _name in ("count_by_first_letter", "count_one_group", "reduce_concat_remove", "aggregate_lengths"):
    HAND_WRITTEN[_name + "_without_cache"] = HAND_WRITTEN[_name]

CONFIGS = {name: NO_CACHE for name in HAND_WRITTEN if name.endswith("_without_cache")}


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_grouped_table_cases_match_kafka_streams(oracle: SemanticsOracle, name: str) -> None:
    program, inputs = HAND_WRITTEN[name]
    check(oracle, {"program": program, "inputs": inputs, "config": CONFIGS.get(name, {})})

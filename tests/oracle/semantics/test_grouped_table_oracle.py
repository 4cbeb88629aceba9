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


# --- KTable operations on aggregations' tables: old values flow from the aggregation when a table asks ---

WORDS = _in("in1", ("u1", "a b", 5), ("u2", "b", 6), ("u1", "c a", 4), ("u3", "a", 9), (None, "b", 10))


def _word_count(*ops: dict[str, Any]) -> list[dict[str, Any]]:
    return [
        {"op": "stream", "id": "s", "topics": ["in1"]},
        {"op": "flatMapValues", "in": "s", "id": "w", "fn": "words"},
        {"op": "groupBy", "in": "w", "id": "g", "fn": "value", "vtype": "string"},
        {"op": "count", "in": "g", "id": "c", "store": "counts"},
        *ops,
    ]


def _out(table: str, vtype: str, topic: str = "out", **to: Any) -> list[dict[str, Any]]:
    return [
        {"op": "toStream", "in": table, "id": table + "s"},
        {"op": "to", "in": table + "s", "topic": topic, "vtype": vtype, **to},
    ]


AGGREGATION_TABLES: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    # the filter gets the count it replaced as the old value: a count leaving "even" is a delete
    "filter_a_count": (_word_count({"op": "filter", "in": "c", "id": "f", "fn": "even"}, *_out("f", "long")), WORDS),
    "materialized_map_values_of_a_count": (
        _word_count(
            {"op": "mapValues", "in": "c", "id": "m", "fn": "str", "store": "as-text", "vtype": "string"},
            *_out("m", "string"),
        ),
        WORDS,
    ),
    # count of counts: words re-grouped by their count (a word whose count grows moves to the next group)
    "count_of_counts": (
        _word_count(
            {"op": "groupBy", "in": "c", "id": "gc", "fn": "value_as_key", "vtype": "string"},
            {"op": "count", "in": "gc", "id": "cc", "store": None},
            *_out("cc", "long"),
        ),
        WORDS,
    ),
    # a grouped table's aggregation, filtered, then joined and streamed
    "filter_a_grouped_count_and_join_it": (
        [
            *_grouped("first", store=None)[:2],
            {"op": "count", "in": "g", "id": "n", "store": None},
            {"op": "filterNot", "in": "n", "id": "f", "fn": "even"},
            {"op": "stream", "id": "o", "topics": ["orders"]},
            {"op": "leftJoin", "in": "o", "id": "j", "table": "f", "fn": "pair"},
            {"op": "to", "in": "j", "topic": "joined", "vtype": "string"},
            *_out("f", "long"),
        ],
        [*MOVES, *_in("orders", ("a", "o1", 20), ("b", "o2", 21), ("c", "o3", 22))],
    ),
    # a windowed count's table, filtered (windowed keys)
    "filter_a_windowed_count": (
        [
            {"op": "stream", "id": "s", "topics": ["in1"]},
            {"op": "groupByKey", "in": "s", "id": "g", "vtype": "string"},
            {"op": "windowedBy", "in": "g", "id": "w", "size": 10, "grace": 5},
            {"op": "count", "in": "w", "id": "c", "store": None},
            {"op": "filter", "in": "c", "id": "f", "fn": "even"},
            *_out("f", "long", wsize=10),
        ],
        _in("in1", ("k", "a", 1), ("k", "b", 3), ("j", "c", 4), ("k", "d", 12), ("k", "e", 2), ("k", "f", 14)),
    ),
    # a stream reduce, mapped and re-grouped: the reduce sends old values through the mapValues
    "regroup_a_mapped_reduce": (
        [
            {"op": "stream", "id": "s", "topics": ["in1"]},
            {"op": "groupByKey", "in": "s", "id": "g", "vtype": "string"},
            {"op": "reduce", "in": "g", "id": "r", "fn": "max", "vtype": "string", "store": None},
            {"op": "mapValues", "in": "r", "id": "m", "fn": "first"},
            {"op": "groupBy", "in": "m", "id": "gm", "fn": "swap", "vtype": "string"},
            {
                "op": "aggregate",
                "in": "gm",
                "id": "a",
                "fn": "append",
                "sub": "remove",
                "vtype": "string",
                "store": None,
            },
            *_out("a", "string"),
        ],
        _in("in1", ("u1", "b", 5), ("u2", "a", 6), ("u1", "c", 4), ("u2", "ab", 9), ("u3", "ca", 10)),
    ),
}

for _name in list(AGGREGATION_TABLES):
    AGGREGATION_TABLES[_name + "_without_cache"] = AGGREGATION_TABLES[_name]


@pytest.mark.parametrize("name", sorted(AGGREGATION_TABLES))
def test_operations_on_aggregation_tables_match_kafka_streams(oracle: SemanticsOracle, name: str) -> None:
    program, inputs = AGGREGATION_TABLES[name]
    config = NO_CACHE if name.endswith("_without_cache") else {}
    check(oracle, {"program": program, "inputs": inputs, "config": config})


def test_a_materialized_filter_of_an_aggregation_logs_its_deletes_with_their_own_timestamp(
    oracle: SemanticsOracle,
) -> None:
    """The delete of "a" (the aggregate's timestamp, 47) is cached and flushed while a record at 0 is processed:
    its changelog record keeps 47, as Kafka's cache entry keeps its record context."""
    program = [
        {"op": "stream", "id": "s", "topics": ["in1"]},
        {"op": "groupByKey", "in": "s", "id": "g", "vtype": "string"},
        {"op": "reduce", "in": "g", "id": "r", "fn": "concat", "vtype": "string", "store": None},
        {"op": "filter", "in": "r", "id": "f", "fn": "short", "store": "kept", "vtype": "string"},
    ]
    check(oracle, {"program": program, "inputs": _in("in1", ("a", "a", 47), ("a", "a", 0), ("a", "ab", 0))})

"""Programs built with `topology.optimization` on both drivers: Kafka Streams' TopologyTestDriver and streamlet's
must write the same records to the same topics (a merged repartition topic; no changelog for a source table
whose topic is its changelog; one store for a self-join) and describe the same topology."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from streamlet.errors import TopologyError
from tests.oracle.semantics.test_driver_oracle import CONFIGS as STREAM_CONFIGS
from tests.oracle.semantics.test_driver_oracle import HAND_WRITTEN as STREAM_CASES
from tests.oracle.semantics.test_driver_oracle import check
from tests.oracle.semantics.test_stream_joins_oracle import HAND_WRITTEN as JOIN_CASES
from tests.support.semantics_cases import OPTIMIZATIONS, build_topology
from tests.support.semantics_corpus import refusal_difference
from tests.support.semantics_oracle import SemanticsOracle

pytestmark = pytest.mark.oracle

ALL = "all"


@pytest.fixture(scope="module")
def oracle() -> Iterator[SemanticsOracle]:
    with SemanticsOracle() as jvm:
        yield jvm


def _in(topic: str, *steps: tuple[str | None, str | None, int]) -> list[dict[str, Any]]:
    return [{"topic": topic, "key": k, "value": v, "timestamp": ts} for k, v, ts in steps]


CUSTOMERS = _in("customers", ("alice", "a1", 1), ("bob", "b1", 2), ("alice", "a2", 30), ("bob", None, 40))
ORDERS = _in("orders", ("o1", "alice", 10), ("o2", "bob", 20), ("o3", "alice", 35), ("o4", "bob", 45), (None, "x", 50))

HAND_WRITTEN: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    # one key changer, three repartitions: two merge (a filter moves below the topic), a mapValues keeps its own
    "aggregations_below_one_key_changer": (
        [
            {"op": "stream", "id": "s", "topics": ["in1"]},
            {"op": "flatMap", "in": "s", "id": "f", "fn": "words_as_keys"},
            {"op": "groupByKey", "in": "f", "id": "g1", "vtype": "string", "name": "byword"},
            {"op": "count", "in": "g1", "id": "c1"},
            {"op": "filter", "in": "f", "id": "ff", "fn": "has_a"},
            {"op": "groupByKey", "in": "ff", "id": "g2", "vtype": "string"},
            {"op": "reduce", "in": "g2", "id": "r", "fn": "concat", "vtype": "string"},
            {"op": "mapValues", "in": "f", "id": "fv", "fn": "upper"},
            {"op": "groupByKey", "in": "fv", "id": "g3", "vtype": "string"},
            {"op": "count", "in": "g3", "id": "c3", "store": "upper-counts"},
            {"op": "toStream", "in": "c1", "id": "o1"},
            {"op": "toStream", "in": "r", "id": "o2"},
            {"op": "toStream", "in": "c3", "id": "o3"},
            {"op": "to", "in": "o1", "topic": "counts", "vtype": "long"},
            {"op": "to", "in": "o2", "topic": "concat", "vtype": "string"},
            {"op": "to", "in": "o3", "topic": "upper", "vtype": "long"},
        ],
        _in("in1", ("k", "a b a", 50), ("k", "b c", 20), (None, "ab", 60), ("j", "c a", 80)),
    ),
    # a re-keyed stream joined with a source table (its store restored from the topic under reuse) and counted:
    # the join's repartition and the count's merge; the left join keeps null keys in the merged topic
    "rekeyed_orders_join_a_source_table_and_are_counted": (
        [
            {"op": "table", "id": "c", "topic": "customers", "store": "customers-store"},
            {"op": "stream", "id": "o", "topics": ["orders"]},
            {"op": "selectKey", "in": "o", "id": "k", "fn": "value"},
            {"op": "leftJoin", "in": "k", "id": "j", "table": "c", "fn": "pair", "vtype": "string"},
            {"op": "to", "in": "j", "topic": "enriched", "vtype": "string"},
            {"op": "groupByKey", "in": "k", "id": "g", "vtype": "string"},
            {"op": "count", "in": "g", "id": "n"},
            {"op": "toStream", "in": "n", "id": "ns"},
            {"op": "to", "in": "ns", "topic": "per-customer", "vtype": "long"},
        ],
        [*CUSTOMERS, *ORDERS],
    ),
    # streams re-keyed, merged, then aggregated twice: merged below the merge node
    "merged_rekeyed_streams_aggregated_twice": (
        [
            {"op": "stream", "id": "a", "topics": ["in1"]},
            {"op": "stream", "id": "b", "topics": ["in2"]},
            {"op": "selectKey", "in": "a", "id": "ak", "fn": "first"},
            {"op": "selectKey", "in": "b", "id": "bk", "fn": "first"},
            {"op": "merge", "in": "ak", "other": "bk", "id": "m"},
            {"op": "groupByKey", "in": "m", "id": "g1", "vtype": "string"},
            {"op": "count", "in": "g1", "id": "c1"},
            {"op": "peek", "in": "m", "id": "p"},
            {"op": "groupByKey", "in": "p", "id": "g2", "vtype": "string"},
            {"op": "reduce", "in": "g2", "id": "r", "fn": "concat", "vtype": "string"},
            {"op": "toStream", "in": "c1", "id": "o1"},
            {"op": "toStream", "in": "r", "id": "o2"},
            {"op": "to", "in": "o1", "topic": "counts", "vtype": "long"},
            {"op": "to", "in": "o2", "topic": "concat", "vtype": "string"},
        ],
        [*_in("in1", ("x", "ab", 5), ("y", "ba", 7)), *_in("in2", ("z", "abc", 6), ("w", "c", 9))],
    ),
}


@pytest.mark.parametrize("optimization", OPTIMIZATIONS)
@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_optimized_cases_match_kafka_streams(oracle: SemanticsOracle, name: str, optimization: str) -> None:
    program, inputs = HAND_WRITTEN[name]
    check(oracle, {"program": program, "inputs": inputs, "config": {"topology_optimization": optimization}})


@pytest.mark.parametrize("cache", [0, 10 * 1024 * 1024])
@pytest.mark.parametrize("name", sorted(STREAM_CASES))
def test_stream_cases_with_every_optimization_match_kafka_streams(
    oracle: SemanticsOracle, name: str, cache: int
) -> None:
    """Every hand-written case of test_driver_oracle.py again, optimized, with its own settings but the cache's."""
    program, inputs = STREAM_CASES[name]
    own = {k: v for k, v in STREAM_CONFIGS.get(name, {}).items() if k != "statestore_cache_max_bytes"}
    config = {**own, "topology_optimization": ALL, "statestore_cache_max_bytes": cache}
    check(oracle, {"program": program, "inputs": inputs, "config": config})


def _self_join(kind: str, **windows: Any) -> list[dict[str, Any]]:
    op = {"op": "streamJoin", "in": "o", "other": "o", "id": "j", "kind": kind, "fn": "pair", "difference": 10}
    op.update(windows)
    return [{"op": "stream", "id": "o", "topics": ["orders"]}, op, {"op": "to", "in": "j", "topic": "out"}]


#: duplicates, neighbours both ways, out of order, late beyond the grace period, nulls, another key
SELF_INPUTS = _in(
    "orders",
    ("k", "a", 100),
    ("k", "b", 105),
    ("k", "b2", 105),
    ("j", "c", 104),
    ("k", "d", 98),
    (None, "e", 101),
    ("k", None, 102),
    ("k", "f", 300),
    ("k", "g", 99),
    ("k", "h", 150),
)

SELF_JOINS = {
    f"self_{kind}_{label}": (_self_join(kind, **windows), SELF_INPUTS)
    for kind in ("join", "leftJoin", "outerJoin")
    for label, windows in (
        ("symmetric", {}),
        ("grace", {"grace": 60}),
        ("asymmetric", {"before": 2, "after": 20, "grace": 5}),
        ("negative_before", {"before": -3, "after": 8}),
    )
}


@pytest.mark.parametrize("optimization", ["single.store.self.join", ALL])
@pytest.mark.parametrize("name", sorted(SELF_JOINS))
def test_self_joins_match_kafka_streams(oracle: SemanticsOracle, name: str, optimization: str) -> None:
    program, inputs = SELF_JOINS[name]
    check(oracle, {"program": program, "inputs": inputs, "config": {"topology_optimization": optimization}})


@pytest.mark.parametrize("name", sorted(JOIN_CASES))
def test_stream_join_cases_with_every_optimization_match_kafka_streams(oracle: SemanticsOracle, name: str) -> None:
    """Every hand-written case of test_stream_joins_oracle.py again, optimized."""
    program, inputs = JOIN_CASES[name]
    check(oracle, {"program": program, "inputs": inputs, "config": {"topology_optimization": ALL}})


#: KAFKA-9739's pattern, which Kafka Streams 4.4.0 still cannot build under merge.repartition.topics: the first
#: merged repartition moves the key changer's one child (the filter) below the merged topic, and the second finds
#: no child of the key changer above it. A drawn case hit it (tests/support/semantics_corpus.BUILD_REFUSALS).
TWO_AGGREGATIONS_THROUGH_ONE_CHILD = [
    {"op": "stream", "id": "s", "topics": ["in1"]},
    {"op": "flatMap", "in": "s", "id": "f", "fn": "words_as_keys"},
    {"op": "filter", "in": "f", "id": "ff", "fn": "short"},
    {"op": "groupByKey", "in": "ff", "id": "g", "vtype": "string"},
    {"op": "count", "in": "g", "id": "c1"},
    {"op": "count", "in": "g", "id": "c2"},
]


@pytest.mark.parametrize("optimization", OPTIMIZATIONS)
def test_a_program_kafka_streams_cannot_optimize_is_refused_alike(oracle: SemanticsOracle, optimization: str) -> None:
    """Both refuse it under merge.repartition.topics, with the reason BUILD_REFUSALS pairs; both build it otherwise."""
    case = {
        "program": TWO_AGGREGATIONS_THROUGH_ONE_CHILD,
        "inputs": _in("in1", ("k", "a bc", 5)),
        "config": {"topology_optimization": optimization},
    }
    if "merge.repartition.topics" not in optimization and optimization != ALL:
        check(oracle, case)
        return
    error = oracle.run(case)["error"]
    assert refusal_difference(case, error) is None, error
    with pytest.raises(TopologyError, match="found no child of the key changer KSTREAM-FLATMAP-0000000001"):
        build_topology(case)

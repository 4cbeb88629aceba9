"""KStream-KStream joins (join, left join, outer join with JoinWindows) against Kafka Streams' TopologyTestDriver.

Hand-written cases pin every edge: null keys and values on either side, duplicates, out-of-order records within
the grace period, late records, asymmetric `before`/`after` windows, the emission of unmatched records once
their window closes, a stream joined with itself,
re-keyed sides (repartitioned), named joins and stores, and timestamps far enough apart for the window stores'
segments to expire. Generated cases (tests/support/stream_join_cases.py) mix joins with the other operations.
Both sides run on Kafka Streams (KAFKA_VERSION) and on streamlet and must agree record for record (sinks, repartition
topics and every changelog), describe() included.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.oracle.semantics.test_driver_oracle import check
from tests.support.semantics_corpus import check_corpus, corpus
from tests.support.semantics_oracle import SemanticsOracle
from tests.support.stream_join_cases import stream_join_cases

pytestmark = pytest.mark.oracle


@pytest.fixture(scope="module")
def oracle() -> Iterator[SemanticsOracle]:
    with SemanticsOracle() as jvm:
        yield jvm


def _in(topic: str, *steps: tuple[str | None, str | None, int]) -> list[dict[str, Any]]:
    return [{"topic": topic, "key": k, "value": v, "timestamp": ts} for k, v, ts in steps]


def _advance(ms: int = 1000) -> dict[str, Any]:
    return {"advance": ms}


def _join(kind: str, *, this: str = "o", other: str = "p", **windows: Any) -> list[dict[str, Any]]:
    """orders (`o`) joined with payments (`p`), written to `out`."""
    op = {"op": "streamJoin", "in": this, "other": other, "id": "j", "kind": kind, "fn": "pair", "difference": 10}
    op.update(windows)
    return [
        {"op": "stream", "id": "o", "topics": ["orders"]},
        {"op": "stream", "id": "p", "topics": ["payments"]},
        op,
        {"op": "to", "in": "j", "topic": "out", "vtype": "string"},
    ]


#: pairs within 10 ms both ways, a pair 11 ms apart, duplicates of one key and timestamp, both arrival orders
BASIC = [
    *_in("orders", ("k1", "o1", 100), ("k2", "o2", 100)),
    *_in("payments", ("k1", "p1", 105), ("k2", "p2", 111), ("k1", "p1b", 105)),
    *_in("orders", ("k1", "o3", 95), ("k3", "o4", 120)),
    *_in("payments", ("k1", "p3", 90), ("k3", "p4", 110)),
]

#: null keys and null values on both sides, between ordinary records
NULLS = [
    *_in("orders", ("k1", "o1", 10), (None, "o2", 11), ("k1", None, 12)),
    *_in("payments", (None, "p1", 13), ("k1", None, 14), ("k1", "p2", 15)),
    *_in("orders", (None, None, 16)),
    _advance(),
    *_in("orders", ("k2", "o3", 100)),
    _advance(),
    *_in("payments", ("k2", "p3", 200)),
]

#: unmatched records on both sides, closed by later records (Kafka's driver scans for them on every record)
UNMATCHED = [
    *_in("orders", ("k1", "o1", 10), ("k2", "o2", 12)),
    *_in("payments", ("k3", "p1", 14), ("k1", "p2", 15)),
    *_in("orders", ("k4", "o3", 30)),
    _advance(),
    *_in("payments", ("k5", "p3", 40)),
    *_in("orders", ("k6", "o4", 60)),
    _advance(999),
    *_in("orders", ("k6", "o5", 61)),
    _advance(1),
    *_in("payments", ("k6", "p4", 61)),
    _advance(5000),
    *_in("orders", ("k7", "o6", 200)),
]

#: out of order within the grace period (joined, and unmatched ones still held back), then late records
OUT_OF_ORDER = [
    *_in("orders", ("k1", "o1", 100)),
    *_in("payments", ("k9", "p0", 130)),
    *_in("payments", ("k1", "p1", 105)),  # 25 ms behind stream time, in the grace period
    *_in("orders", ("k2", "o2", 115)),
    _advance(),
    *_in("payments", ("k9", "p9", 160)),
    *_in("payments", ("k2", "p2", 120)),  # late: its window closed
    *_in("orders", ("k3", "o3", 90)),  # late and unmatched: a left side emits it at once
    _advance(),
    *_in("orders", ("k9", "o9", 500)),
]

#: asymmetric windows: an order joins payments from 5 ms before to 20 ms after it
ASYMMETRIC = [
    *_in("orders", ("k", "o1", 100)),
    *_in("payments", ("k", "p-6", 94), ("k", "p-5", 95), ("k", "p20", 120), ("k", "p21", 121)),
    *_in("orders", ("k", "o2", 130)),
    _advance(),
    *_in("payments", ("k", "p-late", 300)),
    _advance(),
    *_in("orders", ("k", "o3", 400)),
]

#: timestamps minutes apart: the window stores' 60 s segments expire, and a record for one is dropped (but logged)
EXPIRY = [
    *_in("orders", ("k", "o1", 1_000), ("k", "o2", 61_000)),
    *_in("payments", ("k", "p1", 1_005)),
    *_in("orders", ("k", "o3", 200_000)),
    *_in("payments", ("k", "p2", 61_003), ("k", "p3", 200_001)),
    _advance(),
    *_in("orders", ("k", "o4", 500)),
    *_in("payments", ("k", "p4", 500_000)),
]

SELF_JOIN = [
    {"op": "stream", "id": "o", "topics": ["orders"]},
    {"op": "streamJoin", "in": "o", "other": "o", "id": "j", "kind": "leftJoin", "fn": "pair", "difference": 5},
    {"op": "to", "in": "j", "topic": "out", "vtype": "string"},
]

REKEYED = [
    {"op": "stream", "id": "o", "topics": ["orders"]},
    {"op": "stream", "id": "p", "topics": ["payments"]},
    {"op": "selectKey", "in": "o", "id": "ok", "fn": "first"},
    {"op": "mapValues", "in": "p", "id": "pl", "fn": "length"},
    {"op": "selectKey", "in": "pl", "id": "pk", "fn": "const"},
    {
        "op": "streamJoin",
        "in": "ok",
        "other": "pk",
        "id": "j",
        "kind": "outerJoin",
        "fn": "pair",
        "difference": 10,
        "grace": 5,
        "othervtype": "long",
        "name": "pay",
        "store": "paid",
    },
    {"op": "to", "in": "j", "topic": "out", "vtype": "string"},
    # the same re-keyed stream joined again, unnamed: its repartition is reused
    {"op": "streamJoin", "in": "ok", "other": "o", "id": "j2", "kind": "join", "fn": "pair", "difference": 0},
    {"op": "to", "in": "j2", "topic": "out2", "vtype": "string"},
]

REKEYED_INPUTS = [
    *_in("orders", ("x", "kiwi", 10), ("y", "kale", 12), (None, "apple", 13), ("z", None, 14)),
    *_in("payments", ("a", "pay", 15), (None, "cash", 16), ("b", None, 17)),
    _advance(),
    *_in("orders", ("x", "k", 40), ("w", "banana", 100)),
]

HAND_WRITTEN: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
    "join": (_join("join"), BASIC),
    "left_join": (_join("leftJoin"), BASIC + UNMATCHED),
    "outer_join": (_join("outerJoin"), BASIC + UNMATCHED),
    "join_nulls": (_join("join"), NULLS),
    "left_join_nulls": (_join("leftJoin"), NULLS),
    "outer_join_nulls": (_join("outerJoin"), NULLS),
    "left_join_unmatched": (_join("leftJoin"), UNMATCHED),
    "outer_join_unmatched": (_join("outerJoin"), UNMATCHED),
    "join_out_of_order_and_late": (_join("join", grace=30), OUT_OF_ORDER),
    "left_join_out_of_order_and_late": (_join("leftJoin", grace=30), OUT_OF_ORDER),
    "outer_join_out_of_order_and_late": (_join("outerJoin", grace=30), OUT_OF_ORDER),
    "outer_join_no_grace_out_of_order": (_join("outerJoin"), OUT_OF_ORDER),
    "join_before_after": (_join("join", before=5, after=20), ASYMMETRIC),
    "outer_join_before_after": (_join("outerJoin", before=5, after=20, grace=3), ASYMMETRIC),
    # a negative `before`: an order joins payments from 5 to 20 ms after it only
    "left_join_negative_before": (_join("leftJoin", before=-5, after=20), ASYMMETRIC),
    "join_segments_expire": (_join("join"), EXPIRY),
    "outer_join_segments_expire": (_join("outerJoin", grace=100), EXPIRY),
    # each record joins itself, and its neighbours in both directions
    "self_join": (
        SELF_JOIN,
        _in("orders", ("k", "a", 1), ("k", "b", 3), ("j", "c", 4), (None, "d", 5), ("k", "e", 20)),
    ),
    "rekeyed_named_outer_join": (REKEYED, REKEYED_INPUTS),
    "named_join_with_store_name": (_join("leftJoin", name="pay", store="paid"), BASIC + UNMATCHED),
}
CONFIGS = {"join": {"statestore_cache_max_bytes": 0}, "outer_join": {"statestore_cache_max_bytes": 0}}


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_stream_join_cases_match_kafka_streams(oracle: SemanticsOracle, name: str) -> None:
    program, inputs = HAND_WRITTEN[name]
    check(oracle, {"program": program, "inputs": inputs, "config": CONFIGS.get(name, {})})


def test_generated_stream_join_cases_match_kafka_streams(oracle: SemanticsOracle) -> None:
    check_corpus(oracle, corpus("stream-joins", stream_join_cases()))

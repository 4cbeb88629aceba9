"""Suppress (emit-final and rate-limiting buffers) and punctuation, against Kafka Streams' own driver.

Hand-written cases for each edge, run like the other semantics cases (tests/oracle/semantics/
test_driver_oracle.py): Kafka's TopologyTestDriver and streamlet's must write the same records, in the same
order, to every topic, the suppression buffers' changelogs included (Kafka's buffer format, byte for byte).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.oracle.semantics.test_driver_oracle import check
from tests.support.semantics_oracle import SemanticsOracle

pytestmark = pytest.mark.oracle


@pytest.fixture(scope="module")
def oracle() -> Iterator[SemanticsOracle]:
    with SemanticsOracle() as jvm:
        yield jvm


def _stream(*ops: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"op": "stream", "id": "s", "topics": ["in1"]}, *ops]


def _records(*steps: tuple[str | None, str | None, int]) -> list[dict[str, Any]]:
    return [{"topic": "in1", "key": k, "value": v, "timestamp": ts} for k, v, ts in steps]


def _topic(topic: str, *steps: tuple[str | None, str | None, int]) -> list[dict[str, Any]]:
    return [{"topic": topic, "key": k, "value": v, "timestamp": ts} for k, v, ts in steps]


def _windowed_count(
    size: int, grace: int | None, advance: int | None, *suppress: dict[str, Any]
) -> list[dict[str, Any]]:
    return _stream(
        {"op": "groupByKey", "in": "s", "id": "g", "vtype": "string"},
        {"op": "windowedBy", "in": "g", "id": "w", "size": size, "grace": grace, "advance": advance},
        {"op": "count", "in": "w", "id": "c", "store": "counts"},
        *suppress,
        {"op": "toStream", "in": "f", "id": "o"},
        {"op": "to", "in": "o", "topic": "out", "vtype": "long", "wsize": size},
    )


FINAL = {"op": "suppress", "in": "c", "id": "f", "until": "window_close"}

# (program, inputs, config)
CASES: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]] = {
    # windows of 10 with grace 5: a window's count comes out once stream time reaches end + grace (15 for
    # [0,10)); an out-of-order record within grace still counts, a later one is dropped, and two keys close
    # their windows independently of which key moved stream time
    "emit_final_tumbling_with_grace": (
        _windowed_count(10, 5, None, FINAL),
        _records(
            ("a", "x", 1),
            ("a", "x", 3),
            ("b", "x", 12),
            ("a", "x", 9),
            ("a", "x", 14),
            ("b", "x", 15),
            ("a", "x", 2),
            ("b", "x", 19),
            ("a", "x", 24),
            ("b", "x", 40),
            ("a", "x", 41),
        ),
        {},
    ),
    # withLoggingDisabled: the same final counts, and no buffer changelog at all (the counts' store keeps its)
    "emit_final_with_logging_disabled": (
        _windowed_count(10, 5, None, {**FINAL, "name": "final", "logging": False}),
        _records(("a", "x", 1), ("a", "x", 3), ("b", "x", 12), ("a", "x", 14), ("b", "x", 19), ("a", "x", 40)),
        {"statestore_cache_max_bytes": 0},
    ),
    "time_limit_with_logging_disabled": (
        _windowed_count(
            10, 5, None, {"op": "suppress", "in": "c", "id": "f", "until": "time_limit", "wait": 5, "logging": False}
        ),
        _records(("a", "x", 1), ("b", "x", 4), ("a", "x", 7), ("a", "x", 12), ("b", "x", 30)),
        {},
    ),
    # no grace: a window closes as soon as stream time reaches its end; hopping windows close one by one
    "emit_final_hopping_without_grace": (
        _windowed_count(10, 0, 5, FINAL),
        _records(("a", "x", 1), ("b", "x", 6), ("a", "x", 7), ("a", "x", 10), ("b", "x", 15), ("a", "x", 30)),
        {},
    ),
    # without a cache every update reaches the buffer with its old value: the changelog holds prior and old
    # values (Kafka's sentinel for an old value equal to the prior one)
    "emit_final_without_cache": (
        _windowed_count(10, 5, None, FINAL),
        _records(("a", "x", 1), ("a", "x", 2), ("a", "x", 3), ("b", "x", 4), ("a", "x", 12), ("a", "x", 30)),
        {"statestore_cache_max_bytes": 0},
    ),
    # after a repartition: the buffered record context names the repartition topic and its offsets
    "emit_final_after_group_by_with_a_name": (
        _stream(
            {"op": "groupBy", "in": "s", "id": "g", "fn": "first", "vtype": "string", "name": "by-first"},
            {"op": "windowedBy", "in": "g", "id": "w", "size": 20, "grace": 10, "advance": None},
            {"op": "reduce", "in": "w", "id": "r", "fn": "concat", "vtype": "string"},
            {**FINAL, "in": "r", "name": "final-words"},
            {"op": "toStream", "in": "f", "id": "o"},
            {"op": "to", "in": "o", "topic": "out", "vtype": "string", "wsize": 20},
        ),
        _records(
            (None, "ab", 3), (None, "a", 7), (None, "b", 25), (None, "abc", 14), (None, "ba", 45), (None, "c", 90)
        ),
        {},
    ),
    # a windowed reduce whose first value is null writes a null aggregate (no cache): a delete reaching an
    # emit-final buffer is never emitted, one reaching a time-limit buffer is
    "deletes_in_final_and_time_limited_buffers": (
        _stream(
            {"op": "groupByKey", "in": "s", "id": "g", "vtype": "string"},
            {"op": "windowedBy", "in": "g", "id": "w", "size": 10, "grace": 0},
            {"op": "reduce", "in": "w", "id": "r", "fn": "concat", "vtype": "string"},
            {"op": "suppress", "in": "r", "id": "f", "until": "window_close"},
            {"op": "suppress", "in": "r", "id": "l", "until": "time_limit", "wait": 3},
            {"op": "toStream", "in": "f", "id": "fo"},
            {"op": "toStream", "in": "l", "id": "lo"},
            {"op": "to", "in": "fo", "topic": "final", "vtype": "string", "wsize": 10},
            {"op": "to", "in": "lo", "topic": "limited", "vtype": "string", "wsize": 10},
        ),
        _records(("k", None, 1), ("j", "b", 2), ("k", "a", 5), ("k", None, 12), ("j", "c", 13), ("j", "d", 30)),
        {"statestore_cache_max_bytes": 0},
    ),
    # a rate limit on a key-value table: each key's latest count leaves 20 ms (stream time) after the key's
    # first buffered update; a later update of a buffered key keeps its place
    "time_limit_unbounded": (
        _stream(
            {"op": "groupByKey", "in": "s", "id": "g", "vtype": "string"},
            {"op": "count", "in": "g", "id": "c"},
            {"op": "suppress", "in": "c", "id": "f", "until": "time_limit", "wait": 20},
            {"op": "toStream", "in": "f", "id": "o"},
            {"op": "to", "in": "o", "topic": "out", "vtype": "long"},
        ),
        _records(
            ("a", "x", 0), ("b", "x", 5), ("a", "x", 15), ("a", "x", 20), ("b", "x", 26), ("c", "x", 3), ("a", "x", 60)
        ),
        {},
    ),
    # a suppressed table is a table: filtered, mapped and streamed (its updates as they leave the buffer), and
    # read by joins through the buffer: a buffered key reads as its value before its first buffered update
    # (what the suppressed table last emitted, with an unknown timestamp), any other key as the count reads
    "operations_and_joins_on_a_suppressed_table": (
        _stream(
            {"op": "groupByKey", "in": "s", "id": "g", "vtype": "string"},
            {"op": "count", "in": "g", "id": "c", "store": "counts"},
            {"op": "suppress", "in": "c", "id": "f", "until": "time_limit", "wait": 20},
            {"op": "filter", "in": "f", "id": "ff", "fn": "even"},
            {"op": "mapValues", "in": "ff", "id": "fm", "fn": "str", "vtype": "string"},
            {"op": "toStream", "in": "fm", "id": "o"},
            {"op": "to", "in": "o", "topic": "out", "vtype": "string"},
            {"op": "stream", "id": "q", "topics": ["orders"]},
            {"op": "leftJoin", "in": "q", "id": "qj", "table": "f", "fn": "pair", "vtype": "string"},
            {"op": "to", "in": "qj", "topic": "enriched", "vtype": "string"},
            {"op": "join", "in": "q", "id": "qe", "table": "ff", "fn": "pair", "vtype": "string"},
            {"op": "to", "in": "qe", "topic": "even", "vtype": "string"},
            {"op": "table", "id": "t", "topic": "tin1", "store": None},
            {"op": "leftJoin", "in": "t", "id": "tj", "table": "f", "fn": "pair"},
            {"op": "outerJoin", "in": "f", "id": "jt", "table": "t", "fn": "pair"},
            {"op": "toStream", "in": "tj", "id": "tjs"},
            {"op": "to", "in": "tjs", "topic": "table-joined", "vtype": "string"},
            {"op": "toStream", "in": "jt", "id": "jts"},
            {"op": "to", "in": "jts", "topic": "joined-table", "vtype": "string"},
        ),
        [
            *_records(("a", "x", 0), ("b", "x", 2)),
            *_topic("orders", ("a", "o1", 3), ("c", "o2", 4)),  # a is buffered: nothing emitted for it yet
            *_topic("tin1", ("a", "t1", 5), ("b", "t2", 6), ("z", "t3", 7)),
            *_records(("a", "x", 21), ("a", "x", 22)),  # a's first count leaves at 20; 2 and 3 are buffered
            *_topic("orders", ("a", "o3", 23), ("b", "o4", 24)),
            *_records(("b", "x", 25), ("c", "x", 41), ("a", "x", 42)),  # a's 3 and b's 2 leave
            *_topic("orders", ("a", "o5", 43), ("b", "o6", 44), ("c", "o7", 45)),
            *_topic("tin1", ("a", None, 46), ("c", "t4", 47)),
            *_records(("d", "x", 90)),  # everything else leaves
            *_topic("orders", ("a", "o8", 91), ("c", "o9", 92)),
        ],
        {},
    ),
    # a suppressed table re-grouped: each update leaving the buffer moves its key between groups (old values
    # from the buffer), and a delete reaching a time-limited buffer leaves as a delete
    "suppressed_table_regrouped": (
        _stream(
            {"op": "groupByKey", "in": "s", "id": "g", "vtype": "string"},
            {"op": "count", "in": "g", "id": "c"},
            {"op": "suppress", "in": "c", "id": "f", "until": "time_limit", "wait": 10},
            {"op": "groupBy", "in": "f", "id": "p", "fn": "value_as_key", "vtype": "string"},
            {"op": "count", "in": "p", "id": "n", "store": None},
            {"op": "toStream", "in": "n", "id": "o"},
            {"op": "to", "in": "o", "topic": "out", "vtype": "long"},
        ),
        _records(
            ("a", "x", 0), ("b", "x", 1), ("a", "x", 2), ("c", "x", 12), ("b", "x", 13), ("a", "x", 30), ("d", "x", 50)
        ),
        {"statestore_cache_max_bytes": 0},
    ),
    # at most two keys: a third emits the oldest early (before its time limit)
    "time_limit_max_records_emits_early": (
        _stream(
            {"op": "groupByKey", "in": "s", "id": "g", "vtype": "string"},
            {"op": "aggregate", "in": "g", "id": "c", "fn": "append", "vtype": "string"},
            {
                "op": "suppress",
                "in": "c",
                "id": "f",
                "until": "time_limit",
                "wait": 100,
                "buffer": "max_records",
                "limit": 2,
            },
            {"op": "toStream", "in": "f", "id": "o"},
            {"op": "to", "in": "o", "topic": "out", "vtype": "string"},
        ),
        _records(
            ("a", "x", 0), ("b", "y", 1), ("a", "z", 2), ("c", "w", 3), ("d", "v", 4), ("b", "u", 5), ("a", "t", 200)
        ),
        {},
    ),
    # a byte bound, counted as Kafka counts (key, values, record context and buffer time)
    "time_limit_max_bytes_emits_early": (
        _stream(
            {"op": "groupByKey", "in": "s", "id": "g", "vtype": "string"},
            {"op": "reduce", "in": "g", "id": "c", "fn": "concat", "vtype": "string"},
            {
                "op": "suppress",
                "in": "c",
                "id": "f",
                "until": "time_limit",
                "wait": 50,
                "buffer": "max_bytes",
                "limit": 90,
            },
            {"op": "toStream", "in": "f", "id": "o"},
            {"op": "to", "in": "o", "topic": "out", "vtype": "string"},
        ),
        _records(
            ("a", "xx", 0), ("b", "yyy", 1), ("a", "zzzz", 2), ("c", "w", 3), ("a", "abcdefgh", 4), ("d", "v", 60)
        ),
        {"statestore_cache_max_bytes": 0},
    ),
    # stream-time punctuation every 10 ms, aligned to 0: fires at the first record, then once per advance past
    # the next multiple, however far stream time jumps; an out-of-order record moves nothing
    "stream_time_punctuation": (
        _stream(
            {"op": "process", "in": "s", "id": "p", "interval": 10, "ptype": "stream"},
            {"op": "to", "in": "p", "topic": "out", "vtype": "string"},
        ),
        _records(
            ("a", "x", 3), ("a", "x", 9), ("b", "x", 10), ("a", "x", 4), ("a", "x", 47), ("b", "x", 49), ("a", "x", 50)
        ),
        {},
    ),
    # wall-clock punctuation every 100 ms from when the processor started (wall clock 0): driven by the
    # driver's advances, records or not, at most once per advance; a second one is cancelled after 2 firings
    "wall_clock_punctuation": (
        _stream(
            {"op": "process", "in": "s", "id": "p", "interval": 100, "ptype": "wall"},
            {"op": "process", "in": "s", "id": "q", "interval": 40, "ptype": "wall", "cancel_after": 2},
            {"op": "to", "in": "p", "topic": "out", "vtype": "string"},
            {"op": "to", "in": "q", "topic": "cancelled", "vtype": "string"},
        ),
        [
            *_records(("a", "x", 5)),
            {"advance": 50},
            *_records(("a", "x", 6)),
            {"advance": 60},
            {"advance": 350},
            *_records(("b", "x", 1)),
            {"advance": 99},
            {"advance": 1},
        ],
        {},
    ),
    # three processors due at the same stream times: they fire in Kafka's order (processors scheduled in
    # topology order, then java.util.PriorityQueue's order among equal times)
    "punctuations_due_together": (
        _stream(
            {"op": "process", "in": "s", "id": "p", "interval": 10, "ptype": "stream", "name": "first"},
            {"op": "process", "in": "p", "id": "q", "interval": 10, "ptype": "stream", "name": "second"},
            {"op": "filter", "in": "s", "id": "f", "fn": "short"},
            {"op": "process", "in": "f", "id": "r", "interval": 5, "ptype": "stream", "name": "third"},
            {"op": "to", "in": "q", "topic": "out", "vtype": "string"},
            {"op": "to", "in": "r", "topic": "out", "vtype": "string"},
        ),
        _records(("a", "long", 0), ("a", "x", 10), ("a", "long", 35), ("a", "x", 40), ("a", "x", 41), ("a", "x", 60)),
        {},
    ),
    # what a punctuator forwards is repartitioned and counted like any record, with the punctuation time
    "punctuation_feeds_an_aggregation": (
        _stream(
            {"op": "process", "in": "s", "id": "p", "interval": 20, "ptype": "stream", "cancel_after": 3},
            {"op": "groupByKey", "in": "p", "id": "g", "vtype": "string"},
            {"op": "count", "in": "g", "id": "c"},
            {"op": "toStream", "in": "c", "id": "o"},
            {"op": "to", "in": "o", "topic": "out", "vtype": "long"},
        ),
        _records(("a", "x", 1), ("b", "x", 21), ("a", "x", 45), ("a", "x", 60), ("a", "x", 90)),
        {},
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_hand_written_cases_match_kafka_streams(oracle: SemanticsOracle, name: str) -> None:
    program, inputs, config = CASES[name]
    check(oracle, {"program": program, "inputs": inputs, "config": config})

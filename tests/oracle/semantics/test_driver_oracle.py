"""streamlet's TopologyTestDriver against Kafka Streams' own, record for record (topic, key, value, timestamp).

Each case is a DSL program (tests/support/dsl_spec.py), input records and wall-clock advances. The Java
oracle (oracle/semantics, kafka-streams + kafka-streams-test-utils, KAFKA_VERSION) runs it on Kafka's driver and prints
every record written to every topic (sinks, repartition and changelog topics) plus `describe()`; streamlet
must give exactly the same. Needs Java 17+ and Maven (the jar is built on first use).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.semantics_cases import build_topology, run_streamlet, semantic_cases
from tests.support.semantics_corpus import check_corpus, corpus
from tests.support.semantics_oracle import SemanticsOracle

pytestmark = pytest.mark.oracle


@pytest.fixture(scope="module")
def oracle() -> Iterator[SemanticsOracle]:
    with SemanticsOracle() as jvm:
        yield jvm


def check(oracle: SemanticsOracle, case: dict[str, Any]) -> None:
    expected = oracle.run(case)
    assert "error" not in expected, expected.get("error")
    describe = str(build_topology(case).describe())
    assert describe == expected.pop("describe"), json.dumps(case)
    assert run_streamlet(case) == expected, json.dumps(case)


def _stream(*ops: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"op": "stream", "id": "s", "topics": ["in1"]}, *ops]


def _records(*steps: tuple[str | None, str | None, int]) -> list[dict[str, Any]]:
    return [{"topic": "in1", "key": k, "value": v, "timestamp": ts} for k, v, ts in steps]


WORDCOUNT = _stream(
    {"op": "flatMapValues", "in": "s", "id": "w", "fn": "words"},
    {"op": "groupBy", "in": "w", "id": "g", "fn": "value", "vtype": "string"},
    {"op": "count", "in": "g", "id": "t", "store": "counts"},
    {"op": "toStream", "in": "t", "id": "o"},
    {"op": "to", "in": "o", "topic": "out", "vtype": "long"},
)

#: a table's updates for a mapper that fails on "x"
TABLE_STEPS = [("k1", "a", 1), ("k1", "x", 2), ("k2", "x", 3), ("k1", "b", 4)]

HAND_WRITTEN = {
    # the aggregate keeps the larger timestamp: "b" at 40 after "b" at 100 is emitted at 100
    "wordcount_out_of_order": (WORDCOUNT, _records((None, "a b a", 100), (None, "b", 40), (None, "a", 300))),
    # no cache: every update of one input record is emitted, not only the last per key
    "wordcount_without_cache": (WORDCOUNT, _records((None, "a b a", 100), ("k", "a", 5))),
    "reduce_and_aggregate_on_one_grouping": (
        _stream(
            {"op": "groupByKey", "in": "s", "id": "g", "vtype": "string"},
            {"op": "reduce", "in": "g", "id": "r", "fn": "max", "vtype": "string"},
            {"op": "aggregate", "in": "g", "id": "a", "fn": "len_sum", "vtype": "long", "store": "lens"},
            {"op": "toStream", "in": "r", "id": "rs"},
            {"op": "toStream", "in": "a", "id": "as"},
            {"op": "to", "in": "rs", "topic": "max", "vtype": "string"},
            {"op": "to", "in": "as", "topic": "lens", "vtype": "long"},
        ),
        _records(("k1", "ab", 10), ("k2", "c", 5), ("k1", "abc", 7), (None, "x", 1), ("k1", "b", 20)),
    ),
    # two repartitions fed by one record: Kafka's driver orders the queued records by timestamp
    "two_repartitions_and_a_count_of_counts": (
        _stream(
            {"op": "flatMap", "in": "s", "id": "f", "fn": "words_as_keys"},
            {"op": "groupByKey", "in": "f", "id": "g1", "vtype": "string", "name": "byword"},
            {"op": "groupBy", "in": "s", "id": "g2", "fn": "first", "vtype": "string"},
            {"op": "count", "in": "g1", "id": "c1"},
            {"op": "count", "in": "g2", "id": "c2"},
            {"op": "toStream", "in": "c1", "id": "o1"},
            {"op": "mapValues", "in": "o1", "id": "o2", "fn": "str"},
            {"op": "groupBy", "in": "o2", "id": "g3", "fn": "value", "vtype": "string"},
            {"op": "count", "in": "g3", "id": "c3", "store": "count-of-counts"},
            {"op": "toStream", "in": "c3", "id": "o3"},
            {"op": "to", "in": "o3", "topic": "out", "vtype": "long"},
        ),
        [*_records(("k", "a b a", 50), ("k", "b c", 20)), {"advance": 100}, *_records(("j", "c", 80))],
    ),
    # tumbling windows of 10 with grace 5: out-of-order records within grace update their window, later ones
    # (window end <= stream time - grace) are dropped; a null key is skipped
    "tumbling_count_with_grace": (
        _stream(
            {"op": "groupByKey", "in": "s", "id": "g", "vtype": "string"},
            {"op": "windowedBy", "in": "g", "id": "w", "size": 10, "grace": 5},
            {"op": "count", "in": "w", "id": "c", "store": "per-10ms"},
            {"op": "toStream", "in": "c", "id": "o"},
            {"op": "to", "in": "o", "topic": "out", "vtype": "long", "wsize": 10},
        ),
        _records(
            ("k", "x", 1), ("k", "x", 12), ("k", "x", 8), ("j", "x", 15), ("k", "x", 9), (None, "x", 30), ("k", "x", 3)
        ),
    ),
    # hopping windows (size 10, advance 5, no grace) after a repartition: each record lands in two windows
    "hopping_reduce_after_group_by": (
        _stream(
            {"op": "groupBy", "in": "s", "id": "g", "fn": "first", "vtype": "string", "name": "by-first"},
            {"op": "windowedBy", "in": "g", "id": "w", "size": 10, "grace": None, "advance": 5},
            {"op": "reduce", "in": "w", "id": "r", "fn": "concat", "vtype": "string"},
            {"op": "toStream", "in": "r", "id": "o"},
            {"op": "to", "in": "o", "topic": "out", "vtype": "string", "wsize": 10},
        ),
        _records((None, "ab", 3), (None, "a", 7), (None, "b", 11), (None, "abc", 4), (None, "ba", 25), (None, "a", 9)),
    ),
    # a windowed aggregate whose windows expire from the segmented store while others are written
    "windowed_aggregate_long_run": (
        _stream(
            {"op": "groupByKey", "in": "s", "id": "g", "vtype": "string"},
            {"op": "windowedBy", "in": "g", "id": "w", "size": 30, "grace": 20, "advance": 10},
            {"op": "aggregate", "in": "w", "id": "a", "fn": "len_sum", "vtype": "long", "name": "lens"},
            {"op": "toStream", "in": "a", "id": "o"},
            {"op": "to", "in": "o", "topic": "out", "vtype": "long", "wsize": 30},
        ),
        _records(*((f"k{i % 3}", "ab" * (i % 4), 37 * i % 500 + 25_000 * (i // 20)) for i in range(60))),
    ),
    # a configured extractor reads user topics only: the repartitioned "@7" keeps timestamp 0, and "now"
    # takes the partition time (9, from "@9")
    "extractor_applies_to_user_topics_only": (
        _stream(
            {"op": "flatMapValues", "in": "s", "id": "w", "fn": "words"},
            {"op": "groupBy", "in": "w", "id": "g", "fn": "value", "vtype": "string"},
            {"op": "count", "in": "g", "id": "t"},
        ),
        _records(("k", "a @7", 0), ("k", "@9", 0), ("k", "now", 3), ("k", "drop", 50)),
    ),
    # a null value: the key-value count skips it, the windowed count counts it (Kafka's KStreamWindowAggregate
    # skips null keys only), and the windowed reduce's first null aggregate deletes nothing and emits nothing
    "null_values_in_plain_and_windowed_aggregations": (
        _stream(
            {"op": "groupByKey", "in": "s", "id": "g", "vtype": "string"},
            {"op": "count", "in": "g", "id": "c", "store": "plain"},
            {"op": "windowedBy", "in": "g", "id": "w", "size": 10, "grace": 0},
            {"op": "count", "in": "w", "id": "wc", "store": "windowed"},
            {"op": "reduce", "in": "w", "id": "wr", "fn": "concat", "vtype": "string"},
        ),
        _records(("k", None, 1), ("k", "a", 2), ("k", None, 3), ("j", None, 12), ("j", "b", 13)),
    ),
    # sessions with a gap of 10: 0 and 20 are two sessions until 10 bridges them into [0, 20] (both merged
    # sessions are deleted: tombstones downstream and in the changelog); 50 moves stream time so that 15 is
    # late (its merged session would end at 20 < 50 - 10) and dropped; a null key is skipped, a null value counts
    "session_count_merge_and_late_drop": (
        _stream(
            {"op": "groupByKey", "in": "s", "id": "g", "vtype": "string"},
            {"op": "sessionWindowedBy", "in": "g", "id": "w", "gap": 10, "grace": None},
            {"op": "count", "in": "w", "id": "c", "store": "sessions"},
            {"op": "toStream", "in": "c", "id": "o"},
            {"op": "to", "in": "o", "topic": "out", "vtype": "long", "session": True},
        ),
        _records(
            ("k", "a", 0),
            ("k", "b", 20),
            ("j", "c", 5),
            ("k", "d", 10),
            (None, "e", 12),
            ("k", None, 50),
            ("k", "f", 15),
            ("j", "g", 45),
        ),
    ),
    # gap 5, grace 10: out-of-order records within grace join or bridge sessions; the merger concatenates the
    # merged sessions' aggregates oldest first, then the aggregator appends the record
    "session_aggregate_out_of_order_within_grace": (
        _stream(
            {"op": "groupByKey", "in": "s", "id": "g", "vtype": "string"},
            {"op": "sessionWindowedBy", "in": "g", "id": "w", "gap": 5, "grace": 10},
            {"op": "aggregate", "in": "w", "id": "a", "fn": "append", "vtype": "string", "name": "sessions"},
            {"op": "toStream", "in": "a", "id": "o"},
            {"op": "to", "in": "o", "topic": "out", "vtype": "string", "session": True},
        ),
        _records(
            ("k", "a", 100),
            ("k", "b", 112),
            ("k", "c", 106),
            ("k", "d", 120),
            ("k", "e", 103),
            ("k", "f", 95),
            ("k", "g", 130),
            ("k", "h", 114),
            ("k", "i", 108),
        ),
    ),
    # a session reduce: the first value null makes a null aggregate (a delete), later ones concatenate
    "session_reduce_with_nulls": (
        _stream(
            {"op": "groupByKey", "in": "s", "id": "g", "vtype": "string"},
            {"op": "sessionWindowedBy", "in": "g", "id": "w", "gap": 3, "grace": 0},
            {"op": "reduce", "in": "w", "id": "r", "fn": "concat", "vtype": "string"},
            {"op": "toStream", "in": "r", "id": "o"},
            {"op": "to", "in": "o", "topic": "out", "vtype": "string", "session": True},
        ),
        _records(("k", None, 10), ("k", "a", 12), ("k", "b", 20), ("k", "c", 17), ("k", None, 30), ("k", "d", 31)),
    ),
    # sliding windows of 10, grace 5: each record gets its left window [t - 10, t], the right window of the
    # previous record appears when a later record falls in it, out-of-order records update every window
    # that holds them, and a record whose windows all closed is dropped; null values are skipped
    "sliding_count_left_and_right_windows": (
        _stream(
            {"op": "groupByKey", "in": "s", "id": "g", "vtype": "string"},
            {"op": "slidingWindowedBy", "in": "g", "id": "w", "difference": 10, "grace": 5},
            {"op": "count", "in": "w", "id": "c", "store": "sliding"},
            {"op": "toStream", "in": "c", "id": "o"},
            {"op": "to", "in": "o", "topic": "out", "vtype": "long", "wsize": 10},
        ),
        _records(
            ("k", "a", 20),
            ("k", "b", 25),
            ("k", "c", 40),
            ("k", "d", 33),
            ("k", None, 34),
            ("k", "e", 22),
            ("k", "f", 60),
            ("k", "g", 44),
            ("j", "h", 60),
            ("k", "i", 61),
            ("k", "j", 55),
        ),
    ),
    # records before the time difference share the window [0, d] (no negative starts), and their right
    # windows are created as later records arrive
    "sliding_aggregate_early_records": (
        _stream(
            {"op": "groupByKey", "in": "s", "id": "g", "vtype": "string"},
            {"op": "slidingWindowedBy", "in": "g", "id": "w", "difference": 10, "grace": 20},
            {"op": "aggregate", "in": "w", "id": "a", "fn": "append", "vtype": "string"},
            {"op": "toStream", "in": "a", "id": "o"},
            {"op": "to", "in": "o", "topic": "out", "vtype": "string", "wsize": 10},
        ),
        _records(("k", "a", 5), ("k", "b", 2), ("k", "c", 8), ("k", "d", 14), ("k", "e", 3), ("k", "f", 30)),
    ),
    "sliding_reduce": (
        _stream(
            {"op": "groupBy", "in": "s", "id": "g", "fn": "first", "vtype": "string"},
            {"op": "slidingWindowedBy", "in": "g", "id": "w", "difference": 5, "grace": None},
            {"op": "reduce", "in": "w", "id": "r", "fn": "concat", "vtype": "string"},
            {"op": "toStream", "in": "r", "id": "o"},
            {"op": "to", "in": "o", "topic": "out", "vtype": "string", "wsize": 5},
        ),
        _records(
            (None, "ab", 10), (None, "a", 12), (None, "b", 14), (None, "ac", 15), (None, "ad", 9), (None, "a", 17)
        ),
    ),
    # sessions and sliding windows over minutes: their stores' 60 s segments expire while others are written
    "session_and_sliding_long_run": (
        _stream(
            {"op": "groupByKey", "in": "s", "id": "g", "vtype": "string"},
            {"op": "sessionWindowedBy", "in": "g", "id": "sw", "gap": 20_000, "grace": 10_000},
            {"op": "aggregate", "in": "sw", "id": "sa", "fn": "len_sum", "vtype": "long", "store": "sessions"},
            {"op": "slidingWindowedBy", "in": "g", "id": "lw", "difference": 30_000, "grace": 5_000},
            {"op": "count", "in": "lw", "id": "lc", "store": "sliding"},
            {"op": "toStream", "in": "sa", "id": "so"},
            {"op": "to", "in": "so", "topic": "sessions", "vtype": "long", "session": True},
            {"op": "toStream", "in": "lc", "id": "lo"},
            {"op": "to", "in": "lo", "topic": "sliding", "vtype": "long", "wsize": 30_000},
        ),
        _records(*((f"k{i % 3}", "ab" * (i % 4), 7_919 * i % 50_000 + 25_000 * (i // 10)) for i in range(60))),
    ),
    # a mapper that raises on a count a cache flush forwards (the driver commits after every record), skipped by
    # the processing exception handler: b's 2 is in the changelog, not in the output, and b's 3 follows
    "a_failing_mapper_below_a_cached_count_skipped": (
        _stream(
            {"op": "groupByKey", "in": "s", "id": "g", "vtype": "string"},
            {"op": "count", "in": "g", "id": "t", "store": "counts"},
            {"op": "toStream", "in": "t", "id": "o"},
            {"op": "mapValues", "in": "o", "id": "m", "fn": "fail_x_or_2", "name": "check"},
            {"op": "to", "in": "m", "topic": "out", "vtype": "long"},
        ),
        _records(("a", "w", 1), ("b", "w", 2), ("b", "w", 3), ("c", "w", 4), ("b", "w", 5)),
    ),
    # the same below a cached table's source store (its "x"s are logged, not emitted), and on stream records
    "a_failing_mapper_below_a_cached_table_skipped": (
        [
            {"op": "table", "id": "t", "topic": "tin1", "store": "tstore"},
            {"op": "mapValues", "in": "t", "id": "m", "fn": "fail_x_or_2"},
            {"op": "toStream", "in": "m", "id": "o"},
            {"op": "to", "in": "o", "topic": "out", "vtype": "string"},
            {"op": "stream", "id": "s", "topics": ["in1"]},
            {"op": "mapValues", "in": "s", "id": "sm", "fn": "fail_x_or_2"},
            {"op": "to", "in": "sm", "topic": "out2", "vtype": "string"},
        ],
        [
            *({"topic": "tin1", "key": k, "value": v, "timestamp": ts} for k, v, ts in TABLE_STEPS),
            *_records(("s1", "x", 5), ("s2", "y", 6)),
        ],
    ),
}

# without a cache Kafka has no caching layer: the windowed reduce's null aggregate is logged and emitted
HAND_WRITTEN["null_values_without_cache"] = HAND_WRITTEN["null_values_in_plain_and_windowed_aggregations"]
# without a cache every merged session's tombstone and every window update is emitted
for _name in ("session_count_merge_and_late_drop", "session_reduce_with_nulls", "sliding_count_left_and_right_windows"):
    HAND_WRITTEN[f"{_name}_without_cache"] = HAND_WRITTEN[_name]

CONFIGS: dict[str, dict[str, Any]] = {
    "wordcount_without_cache": {"statestore_cache_max_bytes": 0},
    "null_values_without_cache": {"statestore_cache_max_bytes": 0},
    "session_count_merge_and_late_drop_without_cache": {"statestore_cache_max_bytes": 0},
    "session_reduce_with_nulls_without_cache": {"statestore_cache_max_bytes": 0},
    "sliding_count_left_and_right_windows_without_cache": {"statestore_cache_max_bytes": 0},
    "extractor_applies_to_user_topics_only": {"timestamp_extractor": "payload"},
    "a_failing_mapper_below_a_cached_count_skipped": {"processing_exception_handler": "log_and_continue"},
    "a_failing_mapper_below_a_cached_table_skipped": {"processing_exception_handler": "log_and_continue"},
}


@pytest.mark.parametrize("name", sorted(HAND_WRITTEN))
def test_hand_written_cases_match_kafka_streams(oracle: SemanticsOracle, name: str) -> None:
    program, inputs = HAND_WRITTEN[name]
    check(oracle, {"program": program, "inputs": inputs, "config": CONFIGS.get(name, {})})


def test_generated_cases_match_kafka_streams(oracle: SemanticsOracle) -> None:
    check_corpus(oracle, corpus("driver", semantic_cases()))

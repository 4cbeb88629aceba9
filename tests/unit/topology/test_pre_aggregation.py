"""Pre-aggregation before the repartition topic: the topology it builds, and the same final aggregates as
without it (driven through the TopologyTestDriver, against the plain aggregation as the reference)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from examples.wordcount.dsl import build_topology, split_words
from streamlet.errors import TopologyError
from streamlet.runtime.dropped_records import DroppedRecords
from streamlet.runtime.pre_aggregate import pre_aggregate_node
from streamlet.runtime.record_context import RecordContext
from streamlet.task_id import TaskId
from streamlet.testing import TopologyTestDriver
from streamlet.topology import StreamsBuilder, Topology
from streamlet.topology.nodes import PreAggregateSpec
from streamlet.topology.pre_aggregation import for_count

Records = list[tuple[str | None, str | None, int]]


Outputs = list[tuple[Any, Any, int]]


def _run(topology: Topology, records: Records, out_serde: str = "int64") -> tuple[Outputs, dict[Any, Any]]:
    """Every output record, and the last value (with its timestamp) per key."""
    with TopologyTestDriver(topology) as driver:
        source = driver.create_input_topic("in", key_serde="str", value_serde="str")
        out = driver.create_output_topic("out", key_serde="str", value_serde=out_serde)
        for key, value, timestamp in records:
            source.pipe_input(key, value, timestamp=timestamp)
        outputs = [(r.key, r.value, r.timestamp) for r in out.read_records_to_list()]
    last = {}
    for key, value, timestamp in outputs:
        last[key] = (value, timestamp)
    return outputs, last


def _grouped(builder: StreamsBuilder) -> Any:
    return (
        builder.stream("in", key_serde="str", value_serde="str")
        .flat_map_values(split_words)
        .group_by(lambda _key, word: word, key_serde="str", value_serde="str")
    )


def count_topology(pre: bool) -> Topology:
    builder = StreamsBuilder()
    _grouped(builder).count("counts", pre_aggregate=pre).to_stream().to("out", key_serde="str", value_serde="int64")
    return builder.build()


def reduce_topology(pre: bool) -> Topology:
    builder = StreamsBuilder()
    table = (
        builder.stream("in", key_serde="str", value_serde="str")
        .filter(lambda _k, v: v is not None)
        .select_key(lambda _k, v: v[:1])
        .group_by_key(key_serde="str", value_serde="str")
        .reduce(max, "longest", pre_aggregate=pre)
    )
    table.to_stream().to("out", key_serde="str", value_serde="str")
    return builder.build()


def aggregate_topology(pre: bool) -> Topology:
    builder = StreamsBuilder()
    grouped = (
        builder.stream("in", key_serde="str", value_serde="str")
        .filter(lambda _k, v: v is not None)
        .select_key(lambda _k, v: v[:1])
        .group_by_key(key_serde="str", value_serde="str")
    )
    combiner = (lambda aggregate, partial: aggregate + partial) if pre else None
    grouped.aggregate(
        lambda: 0, lambda _k, v, total: total + len(v), "lengths", value_serde="int64", combiner=combiner
    ).to_stream().to("out", key_serde="str", value_serde="int64")
    return builder.build()


def test_describe_shows_the_pre_aggregation_and_nothing_else_changes() -> None:
    plain = str(build_topology("in", "out").describe())
    pre = str(build_topology("in", "out", pre_aggregate=True).describe())
    block = (
        "    Processor: KSTREAM-PREAGGREGATE-0000000003 (stores: [])\n"
        "      --> counts-store-repartition-filter\n"
        "      <-- KSTREAM-KEY-SELECT-0000000002\n"
    )
    assert block in pre
    # without the node, and with the arrows around it joined again, it is Kafka Streams' WordCount
    rejoined = (
        pre.replace(block, "")
        .replace("--> KSTREAM-PREAGGREGATE-0000000003", "--> counts-store-repartition-filter")
        .replace("<-- KSTREAM-PREAGGREGATE-0000000003", "<-- KSTREAM-KEY-SELECT-0000000002")
    )
    assert rejoined == plain


def test_the_repartition_topic_carries_int64_partial_counts() -> None:
    topology = build_topology("in", "out", pre_aggregate=True)
    sink = next(spec for spec in topology.nodes if getattr(spec, "topic", "").endswith("-repartition"))
    assert type(sink.value_serde).__name__ == "LongSerde"


def test_pre_aggregation_needs_a_repartition() -> None:
    builder = StreamsBuilder()
    grouped = builder.stream("in", key_serde="str", value_serde="str").group_by_key()
    with pytest.raises(TopologyError, match="has none"):
        grouped.count(pre_aggregate=True)


def test_a_named_repartition_is_not_shared_between_partials_and_records() -> None:
    builder = StreamsBuilder()
    grouped = (
        builder.stream("in", key_serde="str", value_serde="str")
        .select_key(lambda _k, v: v)
        .group_by_key(key_serde="str", value_serde="str", name="shared")
    )
    grouped.count("a", pre_aggregate=True)
    with pytest.raises(TopologyError, match="partial aggregates"):
        grouped.count("b")
    builder = StreamsBuilder()
    grouped = (
        builder.stream("in", key_serde="str", value_serde="str")
        .select_key(lambda _k, v: v)
        .group_by_key(key_serde="str", value_serde="str", name="shared")
    )
    grouped.count("a")
    with pytest.raises(TopologyError, match="record by record"):
        grouped.count("b", pre_aggregate=True)


_values = st.one_of(st.none(), st.text(alphabet="ab c-d", max_size=12))
_records = st.lists(
    st.tuples(st.sampled_from([None, "k1", "k2"]), _values, st.integers(min_value=0, max_value=50)), max_size=25
)


@settings(max_examples=60, deadline=None)
@given(records=_records)
def test_count_ends_with_the_same_counts_and_timestamps(records: Records) -> None:
    plain_outputs, plain_last = _run(count_topology(False), records)
    pre_outputs, pre_last = _run(count_topology(True), records)
    assert pre_last == plain_last
    assert len(pre_outputs) <= len(plain_outputs)  # coarser, never more


@settings(max_examples=60, deadline=None)
@given(records=_records)
def test_reduce_ends_with_the_same_values(records: Records) -> None:
    assert _run(reduce_topology(True), records, "str")[1] == _run(reduce_topology(False), records, "str")[1]


@settings(max_examples=60, deadline=None)
@given(records=_records)
def test_aggregate_with_a_combiner_ends_with_the_same_values(records: Records) -> None:
    assert _run(aggregate_topology(True), records)[1] == _run(aggregate_topology(False), records)[1]


class _Graph:
    def __init__(self) -> None:
        self.record = RecordContext()
        self.dropped = DroppedRecords(TaskId(0, 0))
        self.flushers: list[Any] = []

    def add_flusher(self, flush: Any) -> None:
        self.flushers.append(flush)

    def forward_failed(self, exc: Exception) -> None:
        raise exc


def test_partials_go_out_on_flush_with_their_largest_timestamp_and_early_when_too_many_keys() -> None:
    graph = _Graph()
    sent: list[tuple[Any, Any, int]] = []
    spec = PreAggregateSpec("pre", (), fn=for_count().fold)
    node = pre_aggregate_node(spec, lambda k, v: sent.append((k, v, graph.record.timestamp)), graph, max_keys=3)
    for key, timestamp in [("a", 5), ("b", 2), ("a", 9), ("a", 1), (None, 4)]:
        graph.record.timestamp = timestamp
        node(key, "x")
    graph.record.timestamp = 7
    node("b", None)
    assert sent == [] and graph.dropped.total == 1
    (flush,) = graph.flushers
    flush()
    assert sent == [("a", 3, 9), ("b", 1, 2)]
    assert graph.record.timestamp == 7  # the current record's timestamp is put back
    sent.clear()
    for key in ("x", "y", "z"):
        node(key, "v")
    assert [k for k, _, _ in sent] == ["x", "y", "z"]  # the third key filled the buffer
    sent.clear()
    flush()
    assert sent == []


def test_an_unhashable_key_is_a_clear_error() -> None:
    graph = _Graph()
    spec = PreAggregateSpec("pre", (), fn=for_count().fold)
    node = pre_aggregate_node(spec, lambda k, v: None, graph)
    with pytest.raises(TopologyError, match="not hashable"):
        node({"user": 1}, "v")

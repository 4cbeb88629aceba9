"""The executable per-task processor graph, on a fake runtime context and test-double stores."""

from __future__ import annotations

import re
import struct
from collections import Counter
from typing import Any

import pytest

from streamlet.errors import SerializationError, TopologyError
from streamlet.runtime import processor_graph
from streamlet.runtime.record_context import RecordContext
from streamlet.runtime.task_context import (
    RecordDeserializationError,
    RecordProcessingError,
    StateStore,
    TaskContext,
)
from streamlet.serdes import serde_from_name
from streamlet.task_id import TaskId
from streamlet.topology import StreamsBuilder, Topology
from streamlet.topology.nodes import SinkSpec
from tests.unit.runtime._support import CachingStore, DictStore, FakeContext, Sent, graph_of
from tests.unit.topology.test_describe import wordcount_builder

APP = "streams-wordcount"
INPUT = "streams-plaintext-input"
REPARTITION = f"{APP}-counts-store-repartition"
OUTPUT = "streams-wordcount-output"

TEXT = [
    "Hello Kafka Streams",
    "hello streamlet, hello python!",
    "",
    "all streams lead to Kafka",
    "  Kafka  KAFKA kafka ",
]


def words_of(line: str) -> list[str]:
    """The test's own word splitting (what the WordCount's flat_map_values is meant to do)."""
    return [w for w in re.split(r"\W+", line.lower()) if w]


def int64(value: int) -> bytes:
    return struct.pack(">q", value)


def stamped(timestamp: int, value: bytes) -> bytes:
    """A timestamped store's value: 8-byte big-endian timestamp, then the value (Kafka's ValueAndTimestamp)."""
    return struct.pack(">q", timestamp) + value


def test_fakes_satisfy_the_protocols() -> None:
    assert isinstance(FakeContext(TaskId(0, 0)), TaskContext)
    assert isinstance(DictStore("s"), StateStore)


def test_wordcount_end_to_end() -> None:
    topology = wordcount_builder().build()

    # Sub-topology 0: lines in, (word, word) out to the repartition topic, keyed by the word.
    ctx0 = FakeContext(TaskId(0, 0), APP)
    task0 = graph_of(topology, TaskId(0, 0), ctx0)
    for offset, line in enumerate(TEXT):
        task0.process(INPUT, 0, offset, 1000 + offset, None, line.encode())
    expected_repartition = [
        Sent(REPARTITION, w.encode(), w.encode(), 1000 + offset, None)
        for offset, line in enumerate(TEXT)
        for w in words_of(line)
    ]
    assert ctx0.sent == expected_repartition
    assert ctx0.stores == {}  # stateless task

    # Sub-topology 1: counts per word in the store, and every update to the output topic as int64.
    ctx1 = FakeContext(TaskId(1, 0), APP)
    task1 = graph_of(topology, TaskId(1, 0), ctx1)
    for offset, record in enumerate(ctx0.sent):
        task1.process(record.topic, 0, offset, record.timestamp, record.key, record.value)

    counts = Counter(w for line in TEXT for w in words_of(line))
    last_seen = {w: 1000 + offset for offset, line in enumerate(TEXT) for w in words_of(line)}
    store = ctx1.stores["counts-store"]
    assert store.data == {w.encode(): stamped(last_seen[w], int64(n)) for w, n in counts.items()}

    running: Counter[str] = Counter()
    expected_output = []
    for offset, line in enumerate(TEXT):
        for w in words_of(line):
            running[w] += 1
            expected_output.append(Sent(OUTPUT, w.encode(), int64(running[w]), 1000 + offset, None))
    assert ctx1.sent == expected_output
    assert ctx1.sent[-1].value == b"\x00" * 7 + b"\x05"  # "kafka": once, once, then three times


def test_wordcount_with_a_caching_store_forwards_on_flush_only() -> None:
    topology = wordcount_builder().build()
    ctx = FakeContext(TaskId(1, 0), APP, store_factory=CachingStore)
    task = graph_of(topology, TaskId(1, 0), ctx)
    store = ctx.stores["counts-store"]
    for offset, word in enumerate(["a", "b", "a", "a"]):
        task.process(REPARTITION, 0, offset, 500 + offset, word.encode(), word.encode())
    assert ctx.sent == []  # Kafka Streams' caching: no forward per update
    store.flush()
    assert ctx.sent == [
        Sent(OUTPUT, b"a", int64(3), 503, None),
        Sent(OUTPUT, b"b", int64(1), 501, None),
    ]
    # each update carries its aggregate's timestamp, read from the stored value (the fake passes 0)
    assert task.record.timestamp == 503  # restored after forwarding


def test_repartition_filter_drops_null_keys() -> None:
    builder = StreamsBuilder()
    (
        builder.stream("in", value_serde="str")
        .group_by(lambda k, v: None if v == "skip" else v, key_serde="str", value_serde="str")
        .count("c")
    )
    ctx = FakeContext(TaskId(0, 0))
    task = graph_of(builder.build(), TaskId(0, 0), ctx)
    for offset, value in enumerate(["x", "skip", "y"]):
        task.process("in", 0, offset, offset, None, value.encode())
    assert [(s.topic, s.key) for s in ctx.sent] == [("app-c-repartition", b"x"), ("app-c-repartition", b"y")]


def test_aggregations_skip_null_keys_and_values() -> None:
    builder = StreamsBuilder()
    builder.stream("in", key_serde="str", value_serde="str").group_by_key().count("c").to_stream().to("out")
    ctx = FakeContext(TaskId(0, 0))
    task = graph_of(builder.build(), TaskId(0, 0), ctx)
    task.process("in", 0, 0, 1, None, b"v")
    task.process("in", 0, 1, 2, b"k", None)
    task.process("in", 0, 2, 3, b"k", b"v")
    assert ctx.stores["c"].data == {b"k": stamped(3, int64(1))}
    assert task.dropped_records == 2
    assert ctx.sent == [Sent("out", b"k", int64(1), 3, None)]


def test_reduce_and_aggregate() -> None:
    builder = StreamsBuilder()
    grouped = builder.stream("in", key_serde="str", value_serde="int64").group_by_key()
    grouped.reduce(lambda agg, v: agg + v, "sum").to_stream().to("sums")
    grouped.aggregate(lambda: [], lambda k, v, agg: [*agg, v], "lists", value_serde="json").to_stream().to("lists")
    ctx = FakeContext(TaskId(0, 0))
    task = graph_of(builder.build(), TaskId(0, 0), ctx)
    for offset, (key, value) in enumerate([("a", 1), ("b", 10), ("a", 2)]):
        task.process("in", 0, offset, offset, key.encode(), int64(value))
    assert ctx.stores["sum"].data == {b"a": stamped(2, int64(3)), b"b": stamped(1, int64(10))}
    assert ctx.stores["lists"].data == {b"a": stamped(2, b"[1,2]"), b"b": stamped(1, b"[10]")}
    # Children are forwarded to depth-first in topology order: the reduce table's updates come first.
    assert [(s.topic, s.key, s.value) for s in ctx.sent] == [
        ("sums", b"a", int64(1)),
        ("lists", b"a", b"[1]"),
        ("sums", b"b", int64(10)),
        ("lists", b"b", b"[10]"),
        ("sums", b"a", int64(3)),
        ("lists", b"a", b"[1,2]"),
    ]


def test_table_tombstones_are_forwarded() -> None:
    builder = StreamsBuilder()
    grouped = builder.stream("in", key_serde="str", value_serde="str").group_by_key()
    grouped.aggregate(
        lambda: "", lambda k, v, agg: None if v == "del" else agg + v, "s", value_serde="str"
    ).to_stream().to("out")
    ctx = FakeContext(TaskId(0, 0))
    task = graph_of(builder.build(), TaskId(0, 0), ctx)
    task.process("in", 0, 0, 1, b"k", b"x")
    task.process("in", 0, 1, 2, b"k", b"del")
    assert ctx.stores["s"].data == {}
    assert [(s.key, s.value) for s in ctx.sent] == [(b"k", b"x"), (b"k", None)]


def test_stateless_operations_run_in_order() -> None:
    seen: list[Any] = []
    builder = StreamsBuilder()
    stream = builder.stream("in", key_serde="str", value_serde="json")
    branch = stream.filter(lambda k, v: v["n"] > 0).peek(lambda k, v: seen.append(("peek", k, v["n"])))
    branch.map_values(lambda v: v["n"] * 10).to("tens", value_serde="int64")
    branch.map(lambda k, v: (f"{k}!", str(v["n"]))).to("mapped", key_serde="str", value_serde="str")
    branch.flat_map(lambda k, v: [(k, str(i)) for i in range(v["n"])]).to("flat", key_serde="str", value_serde="str")
    branch.select_key(lambda k, v: v["n"]).to("rekeyed", key_serde="int32")
    stream.filter_not(lambda k, v: v["n"] > 0).foreach(lambda k, v: seen.append(("foreach", k, v["n"])))
    stream.flat_map_values(lambda v: [v["n"], -v["n"]]).to("pm", value_serde="int64")

    ctx = FakeContext(TaskId(0, 0))
    task = graph_of(builder.build(), TaskId(0, 0), ctx)
    task.process("in", 0, 7, 42, b"k", b'{"n":2}')
    task.process("in", 0, 8, 43, b"z", b'{"n":0}')
    assert seen == [("peek", "k", 2), ("foreach", "z", 0)]
    assert [(s.topic, s.key, s.value, s.timestamp) for s in ctx.sent] == [
        ("tens", b"k", int64(20), 42),
        ("mapped", b"k!", b"2", 42),
        ("flat", b"k", b"0", 42),
        ("flat", b"k", b"1", 42),
        ("rekeyed", b"\x00\x00\x00\x02", b'{"n":2}', 42),
        ("pm", b"k", int64(2), 42),
        ("pm", b"k", int64(-2), 42),
        ("pm", b"z", int64(0), 43),
        ("pm", b"z", int64(0), 43),
    ]
    assert (task.record.topic, task.record.partition, task.record.offset, task.record.timestamp) == ("in", 0, 8, 43)


def test_multi_topic_source_and_internal_topic_prefix() -> None:
    builder = StreamsBuilder()
    builder.stream(["a", "b"], value_serde="str").map_values(str.upper).to("out", value_serde="str")
    ctx = FakeContext(TaskId(0, 3), "myapp")
    task = graph_of(builder.build(), TaskId(0, 3), ctx)
    assert set(task.source_topics) == {"a", "b"}
    task.process("b", 3, 0, 9, None, b"x")
    assert ctx.sent == [Sent("out", None, b"X", 9, None)]


def test_deserialization_errors_name_the_record() -> None:
    builder = StreamsBuilder()
    builder.stream("in", value_serde="int64").to("out")
    task = graph_of(builder.build(), TaskId(0, 0), FakeContext(TaskId(0, 0)))
    with pytest.raises(RecordDeserializationError, match=r"in-0@17 .*not 8 \(got 3") as info:
        task.process("in", 0, 17, 1, None, b"abc")
    error = info.value
    assert isinstance(error, SerializationError)
    assert (error.topic, error.partition, error.offset) == ("in", 0, 17)
    assert isinstance(error.__cause__, SerializationError)


def test_processing_errors_name_the_processor_and_the_record() -> None:
    builder = StreamsBuilder()
    builder.stream("in").filter(lambda k, v: True).map_values(lambda v: 1 / 0).to("out")
    task = graph_of(builder.build(), TaskId(0, 0), FakeContext(TaskId(0, 0)))
    with pytest.raises(RecordProcessingError, match=r"processor KSTREAM-MAPVALUES-0000000002 .* in-0@5") as info:
        task.process("in", 0, 5, 1, None, b"v")
    assert isinstance(info.value.cause, ZeroDivisionError)
    assert info.value.node == "KSTREAM-MAPVALUES-0000000002" and not info.value.production


def test_errors_of_a_downstream_node_are_not_blamed_on_its_parent() -> None:
    builder = StreamsBuilder()
    builder.stream("in").flat_map_values(lambda v: [1, 0]).foreach(lambda k, v: 1 / v)
    task = graph_of(builder.build(), TaskId(0, 0), FakeContext(TaskId(0, 0)))
    with pytest.raises(RecordProcessingError) as info:
        task.process("in", 0, 0, 1, None, b"v")  # the first item passes, the second fails in foreach
    assert info.value.node == "KSTREAM-FOREACH-0000000002"


def test_serialization_errors_at_sinks_are_production_errors() -> None:
    builder = StreamsBuilder()
    builder.stream("in", value_serde="str").to("out")  # key serde is the default (bytes)
    task = graph_of(builder.build(), TaskId(0, 0), FakeContext(TaskId(0, 0)))
    builder2 = StreamsBuilder()
    builder2.stream("in", value_serde="str").map_values(len).to("out")  # an int for the bytes serde
    task2 = graph_of(builder2.build(), TaskId(0, 0), FakeContext(TaskId(0, 0)))
    task.process("in", 0, 0, 1, b"k", b"v")
    with pytest.raises(RecordProcessingError, match="BytesSerde cannot serialize a int") as info:
        task2.process("in", 0, 0, 1, b"k", b"v")
    assert isinstance(info.value.cause, SerializationError)
    assert info.value.node == "KSTREAM-SINK-0000000002" and info.value.production


def test_unknown_topic_and_sub_topology() -> None:
    topology: Topology = wordcount_builder().build()
    task = graph_of(topology, TaskId(0, 0), FakeContext(TaskId(0, 0), APP))
    with pytest.raises(TopologyError, match="does not read topic 'other'"):
        task.process("other", 0, 0, 0, None, b"")
    with pytest.raises(TopologyError, match="no sub-topology 5"):
        graph_of(topology, TaskId(5, 0), FakeContext(TaskId(5, 0), APP))


def test_task_graph_metadata() -> None:
    topology = wordcount_builder().build()
    ctx = FakeContext(TaskId(1, 4), APP)
    task = graph_of(topology, TaskId(1, 4), ctx)
    assert task.task_id == TaskId(1, 4)
    assert task.source_topics == (REPARTITION,)
    assert task.store_names == ("counts-store",)
    assert task.nodes == topology.subtopology(1).nodes
    assert set(ctx.stores) == {"counts-store"}
    assert ctx.stores["counts-store"].listener is not None


def test_a_sinks_partitioner_choice_reaches_the_record_collector_unchecked() -> None:
    """The record collector checks a partitioner's choice, with its precise error; compiled, the sink must not
    cast it to `int | None` first (mypyc would raise a TypeError of its own)."""
    string = serde_from_name("str")
    choose: Any = lambda topic, key, value, num_partitions: "0"  # noqa: E731
    spec = SinkSpec("sink", ("up",), "out", string, string, partitioner=choose)
    context = FakeContext(TaskId(0, 0))
    graph = processor_graph.TaskProcessorGraph(TaskId(0, 0), "app", 0, RecordContext())
    processor_graph._sink(spec, "out", context, graph)("k", "v")
    (sent,) = context.sent
    assert callable(sent.partition)
    assert sent.partition(3) == "0"

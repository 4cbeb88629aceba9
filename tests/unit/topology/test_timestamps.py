"""Source timestamps: the record's own, or a configured extractor's, flow to sinks and aggregations."""

from __future__ import annotations

import pytest

from streamlet.config import StreamsConfig
from streamlet.errors import ConfigError
from streamlet.runtime.processor_graph import build_task_graph
from streamlet.runtime.task_context import InvalidTimestampError, RecordProcessingError
from streamlet.runtime.topic_names import TopicNames
from streamlet.task_id import TaskId
from streamlet.topology import StreamsBuilder
from streamlet.topology.timestamps import ConsumedRecord
from tests.unit.runtime._support import FakeContext


def _passthrough() -> StreamsBuilder:
    builder = StreamsBuilder()
    builder.stream("in", key_serde="str", value_serde="str").to("out")
    return builder


def test_sinks_write_the_source_record_timestamp() -> None:
    ctx = FakeContext(TaskId(0, 0))
    graph = build_task_graph(TopicNames(_passthrough().build(), "app"), TaskId(0, 0), ctx)
    graph.process("in", 0, 0, 1234, b"k", b"v")
    assert [(s.topic, s.timestamp) for s in ctx.sent] == [("out", 1234)]


def test_a_negative_timestamp_fails_without_an_extractor() -> None:
    graph = build_task_graph(TopicNames(_passthrough().build(), "app"), TaskId(0, 0), FakeContext(TaskId(0, 0)))
    with pytest.raises(InvalidTimestampError):
        graph.process("in", 0, 0, -1, b"k", b"v")


def test_the_extractor_sees_deserialized_records_and_partition_time() -> None:
    seen: list[tuple[ConsumedRecord, int]] = []

    def extractor(record: ConsumedRecord, partition_time: int) -> int:
        seen.append((record, partition_time))
        return int(record.value)  # the value says when the event happened; negative = drop

    ctx = FakeContext(TaskId(0, 0))
    names = TopicNames(_passthrough().build(), "app")
    graph = build_task_graph(names, TaskId(0, 0), ctx, timestamp_extractor=extractor)
    graph.process("in", 0, 0, 1, b"a", b"50")
    graph.process("in", 0, 1, 2, b"b", b"-5")
    graph.process("in", 0, 2, 3, b"c", b"20")
    graph.process("in", 0, 3, 4, b"d", b"70")
    assert [(s.key, s.timestamp) for s in ctx.sent] == [(b"a", 50), (b"c", 20), (b"d", 70)]
    assert [pt for _, pt in seen] == [-1, 50, 50, 50]
    assert seen[0][0] == ConsumedRecord("in", 0, 0, 1, "a", "50")
    assert graph.dropped_records == 1


def test_config_resolves_module_function_strings() -> None:
    config = StreamsConfig("app", timestamp_extractor="operator:itemgetter")
    assert config.extractor is not None
    with pytest.raises(ConfigError):
        StreamsConfig("app", timestamp_extractor="nope")
    with pytest.raises(ConfigError):
        StreamsConfig("app", timestamp_extractor=42)  # type: ignore[arg-type]


@pytest.mark.parametrize("returned", [1.5, None, True])
def test_an_extractor_returning_no_int_fails_the_record_at_its_source(returned: object) -> None:
    """Checked the same whether the graph runs compiled (mypyc would refuse a non-int) or not."""
    names = TopicNames(_passthrough().build(), "app")
    graph = build_task_graph(
        names,
        TaskId(0, 0),
        FakeContext(TaskId(0, 0)),
        timestamp_extractor=lambda record, partition_time: returned,  # type: ignore[arg-type, return-value]
    )
    with pytest.raises(RecordProcessingError, match=r"returned .* for record in-0@0, not an int") as info:
        graph.process("in", 0, 0, 1, b"k", b"v")
    assert isinstance(info.value.cause, TypeError)
    assert info.value.node == "KSTREAM-SOURCE-0000000000"

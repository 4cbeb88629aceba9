"""DSL: serdes follow the data into repartition topics (re-keying keeps the key serde; annotations declare types)."""

from __future__ import annotations

import json

import pytest

from streamlet.errors import TopologyError
from streamlet.serdes import JsonSerde, LongSerde, StringSerde
from streamlet.task_id import TaskId
from streamlet.topology import StreamsBuilder, Topology
from streamlet.topology.nodes import SinkSpec
from tests.unit.runtime._support import FakeContext, graph_of


def _repartition_sink(topology: Topology) -> SinkSpec:
    (sink,) = [node for node in topology.nodes if isinstance(node, SinkSpec) and node.topic.endswith("-repartition")]
    return sink


def _sent(topology: Topology, topic: str, key: bytes | None, value: bytes) -> tuple[bytes | None, bytes | None]:
    ctx = FakeContext(TaskId(0, 0), application_id="app")
    graph_of(topology, TaskId(0, 0), ctx).process(topic, 0, 0, 0, key, value)
    (sent,) = ctx.sent
    return sent.key, sent.value


def test_group_by_keeps_the_streams_key_and_value_serdes() -> None:
    builder = StreamsBuilder()
    builder.stream("views", key_serde="str", value_serde="json").group_by(lambda _k, v: v["user"]).count("c")
    topology = builder.build()
    sink = _repartition_sink(topology)
    assert isinstance(sink.key_serde, StringSerde) and isinstance(sink.value_serde, JsonSerde)
    assert _sent(topology, "views", b"k", b'{"user":"ann"}') == (b"ann", b'{"user":"ann"}')


def test_select_key_then_repartition_keeps_the_key_serde() -> None:
    builder = StreamsBuilder()
    builder.stream("views", key_serde="str", value_serde="str").select_key(lambda _k, v: v.upper()).repartition("up")
    assert _sent(builder.build(), "views", b"k", b"abc") == (b"ABC", b"abc")


def test_annotated_functions_declare_value_and_key_types() -> None:
    def to_view(line: str) -> dict[str, int]:
        return {"n": len(line)}

    def size(_key: str, view: dict[str, int]) -> int:
        return view["n"]

    builder = StreamsBuilder()
    builder.stream("lines", key_serde="str", value_serde="str").map_values(to_view).group_by(size).count("c")
    topology = builder.build()
    sink = _repartition_sink(topology)
    assert isinstance(sink.key_serde, LongSerde) and isinstance(sink.value_serde, JsonSerde)
    key, value = _sent(topology, "lines", b"k", b"four")
    assert key == (4).to_bytes(8, "big") and json.loads(value or b"") == {"n": 4}


def test_flat_map_values_items_type_from_its_annotation() -> None:
    def words(line: str) -> list[str]:
        return line.split()

    builder = StreamsBuilder()
    builder.stream("lines", value_serde="str").flat_map_values(words).group_by(lambda _k, w: w).count("c")
    assert isinstance(_repartition_sink(builder.build()).value_serde, StringSerde)


def test_a_lambda_after_map_values_drops_the_value_serde_as_kafka_streams_does() -> None:
    builder = StreamsBuilder()
    stream = builder.stream("lines", key_serde="str", value_serde="str").map_values(lambda v: len(v))
    stream.group_by(lambda k, _v: k).count("c")
    assert not isinstance(_repartition_sink(builder.build()).value_serde, StringSerde)


def test_a_key_serde_that_cannot_carry_the_annotated_key_fails_at_build() -> None:
    def user(_key: str, value: str) -> str:
        return value

    with pytest.raises(
        TopologyError, match="group_by key_serde: LongSerde.. carries int, but the declared type is str"
    ):
        StreamsBuilder().stream("v", value_serde="str").group_by(user, key_serde="int64")

"""The three exception handlers on a real StreamTask, record collector and fake producer: what each mode does
with a poison record, and that the records around it are processed."""

from __future__ import annotations

from typing import Any

import pytest
from aiokafka.structs import TopicPartition

from streamlet import App
from streamlet.errors import DeserializationFailure, ProcessingFailure, ProductionFailure
from streamlet.runtime.handlers import ThreadHandlers
from streamlet.runtime.record_collector import RecordCollector
from streamlet.runtime.stream_task import StreamTask
from streamlet.runtime.topic_names import TopicNames
from streamlet.task_id import TaskId
from streamlet.topology import StreamsBuilder, Topology
from tests.unit.runtime._fakes import FakeKafka, FakeProducer

IN0 = TopicPartition("in", 0)
DLQ = "dead-letters"
T0 = TaskId(0, 0)


def lower_topology() -> Topology:
    builder = StreamsBuilder()
    builder.stream("in", key_serde="str", value_serde="str").map_values(lambda v: v.lower()).to(
        "out", key_serde="str", value_serde="str"
    )
    return builder.build()


class Setup:
    def __init__(self, topology: Topology, **modes: str) -> None:
        self.kafka = FakeKafka({"in": 1, "out": 1, DLQ: 1})
        self.collector = RecordCollector(FakeProducer(self.kafka), (), max_record_bytes=1_000)  # type: ignore[arg-type]
        self.handlers = ThreadHandlers(self.collector, dead_letter_topic=DLQ, **modes)
        self.task = StreamTask(T0, frozenset({IN0}), TopicNames(topology, "app"), None, self.collector, self.handlers)

    async def run(self, *values: bytes | None) -> None:
        for value in values:
            self.kafka.append(IN0, b"k", value, 7)
        self.task.process(IN0, self.kafka.records(IN0))
        await self.collector.flush()

    def values(self, topic: str) -> list[bytes | None]:
        return [v for tp, log in self.kafka.logs.items() if tp.topic == topic for _, v, _ in log]

    def dead_letters(self) -> list[tuple[bytes | None, bytes | None, dict[str, bytes]]]:
        return [(k, v, dict(h)) for k, v, h in self.kafka.dead_letters]


async def test_processing_log_and_continue_skips_the_poison_and_goes_on() -> None:
    s = Setup(lower_topology(), processing="log_and_continue")
    await s.run(b"A", None, b"B")  # None: the value mapper calls None.lower()
    assert s.values("out") == [b"a", b"b"]
    assert s.handlers.processing.skipped == 1
    # a skipped record is a dropped record of the processor that raised (Kafka's dropped-records)
    assert s.task.graph.dropped.counts == {("KSTREAM-MAPVALUES-0000000001", "processing-error"): 1}


async def test_processing_fail_names_task_processor_topic_partition_and_offset() -> None:
    s = Setup(lower_topology())
    with pytest.raises(ProcessingFailure) as info:
        await s.run(b"A", None)
    message = str(info.value)
    assert "task 0_0" in message and "KSTREAM-MAPVALUES-0000000001" in message
    assert "topic in partition 0 offset 1" in message and "AttributeError" in message
    assert "processing_exception_handler='fail'" in message


async def test_processing_dead_letter_keeps_the_raw_record_with_kip_1034_headers() -> None:
    s = Setup(lower_topology(), processing="dead_letter")
    await s.run(None, b"B")
    assert s.values("out") == [b"b"]
    ((key, value, headers),) = s.dead_letters()
    assert key == b"k" and value is None
    assert headers["__streams.errors.exception"] == b"AttributeError"
    assert headers["__streams.errors.topic"] == b"in" and headers["__streams.errors.offset"] == b"0"
    assert headers["__streamlet.errors.processor"] == b"KSTREAM-MAPVALUES-0000000001"


async def test_deserialization_handler_is_unchanged() -> None:
    s = Setup(lower_topology())
    with pytest.raises(DeserializationFailure, match="topic in partition 0 offset 0"):
        await s.run(b"\xff\xfe")  # not UTF-8


async def test_a_record_too_large_to_send_goes_to_the_production_handler() -> None:
    s = Setup(lower_topology(), production="continue")
    await s.run(b"A", b"X" * 2_000, b"B")
    assert s.values("out") == [b"a", b"b"]
    assert s.handlers.production.skipped == 1 and s.handlers.processing.skipped == 0


async def test_production_fail_names_the_sink_and_the_input_record() -> None:
    s = Setup(lower_topology())
    with pytest.raises(ProductionFailure) as info:
        await s.run(b"X" * 2_000)
    message = str(info.value)
    assert "KSTREAM-SINK-0000000002" in message and "topic in partition 0 offset 0" in message
    assert "2,001-byte record for topic out" in message  # key and value


async def test_production_dead_letter_of_a_record_too_large_for_the_dead_letter_topic_keeps_its_headers() -> None:
    s = Setup(lower_topology(), production="dead_letter")
    await s.run(b"X" * 2_000)
    ((key, value, headers),) = s.dead_letters()
    assert key is None and value == b""  # the raw record does not fit either: its position is in the headers
    assert headers["__streams.errors.exception"] == b"RecordTooLargeError"
    assert headers["__streams.errors.partition"] == b"0"


async def test_a_sink_serde_failure_is_a_production_error() -> None:
    builder = StreamsBuilder()
    builder.stream("in", key_serde="str", value_serde="str").map_values(len).to("out", value_serde="str")
    s = Setup(builder.build(), production="continue")
    await s.run(b"A")
    assert s.handlers.production.skipped == 1 and s.values("out") == []


async def test_an_agent_that_raises_is_restarted_and_the_next_records_are_processed() -> None:
    app = App("agents-test")
    out = app.topic("out", value_serde="str")

    @app.agent(app.topic("in", value_serde="str"))
    async def shout(stream: Any) -> None:
        async for line in stream:
            await out.send(value=line.upper())

    s = Setup(app.topology(), processing="log_and_continue")
    await s.run(b"a", None, b"b")
    assert s.values("out") == [b"A", b"B"]
    assert s.handlers.processing.skipped == 1


async def test_a_negative_timestamp_goes_to_the_deserialization_handler() -> None:
    s = Setup(lower_topology(), deserialization="log_and_continue")
    s.kafka.append(IN0, b"k", b"A", 7)
    s.kafka.append(IN0, b"k", b"B", -1)  # a producer that set no timestamp
    s.kafka.append(IN0, b"k", b"C", 9)
    s.task.process(IN0, s.kafka.records(IN0))
    await s.collector.flush()
    assert s.values("out") == [b"a", b"c"]
    assert s.handlers.deserialization.skipped == 1
    assert s.task.graph.dropped.counts == {("KSTREAM-SOURCE-0000000000", "deserialization-error"): 1}


async def test_a_negative_timestamp_fails_the_task_by_default_naming_the_record() -> None:
    s = Setup(lower_topology())
    s.kafka.append(IN0, b"k", b"A", -1)
    with pytest.raises(DeserializationFailure) as info:
        s.task.process(IN0, s.kafka.records(IN0))
    assert "invalid (negative) timestamp -1" in str(info.value) and "offset 0" in str(info.value)

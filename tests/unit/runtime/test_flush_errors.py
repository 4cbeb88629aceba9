"""A user function that raises on a record a store's cache flush forwards: the nodes below a cached table or
aggregation run when the task commits, not while it processes an input record. As Kafka Streams (KIP-1033:
`ProcessorNode#process` catches the error of every node, flushed records included), the error names the node
that raised and goes to the processing exception handler: `fail` stops, naming the node; `log_and_continue`
drops that record, and the rest of the flush and the records after it go on. The flushed entry is in the
store and its changelog either way: Kafka writes it before it forwards it.

The TopologyTestDriver (which has no handler: it raises what `process()` raises) and the worker's task manager
flush through the same store and graph code; both are covered."""

from __future__ import annotations

import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from aiokafka.structs import ConsumerRecord

from streamlet.errors import ProcessingFailure
from streamlet.runtime.handlers import ThreadHandlers
from streamlet.runtime.record_collector import RecordCollector
from streamlet.runtime.stream_task import StreamTask
from streamlet.runtime.task_context import RecordProcessingError
from streamlet.runtime.task_state import TaskState
from streamlet.runtime.topic_names import TopicNames
from streamlet.task_id import TaskId
from streamlet.testing import TopologyTestDriver
from streamlet.topology import StreamsBuilder, Topology
from streamlet.topology.session_windows import SessionWindows
from streamlet.topology.table_joined import TableJoined
from streamlet.topology.windows import TimeWindows
from tests.unit.runtime._fakes import FakeKafka, FakeProducer
from tests.unit.runtime._harness import CHANGELOG, IN0, INPUT, OUTPUT, T0, Harness, latest, new_kafka

CHECK = "check"  # the failing node's name


def _no_twos(count: int) -> int:
    if count == 2:
        raise ValueError(f"no twos: {count}")
    return count


def _no_bad(value: str) -> str:
    if value == "bad":
        raise ValueError("a bad value")
    return value


def _counts_checked() -> Topology:
    """in --count per key (store `counts`, cached)--> map_values(_no_twos, name=check) --> out"""
    builder = StreamsBuilder()
    (
        builder.stream(INPUT, key_serde="str", value_serde="str")
        .group_by_key(key_serde="str", value_serde="str")
        .count("counts")
        .to_stream()
        .map_values(_no_twos, name=CHECK)
        .to(OUTPUT, key_serde="str", value_serde="int64")
    )
    return builder.build()


# ---- the TopologyTestDriver: no handler, the error as process() raises it ---------------------------------------


def _driver_error(builder: StreamsBuilder, topic: str, key: str, value: str, tmp_path: Path) -> RecordProcessingError:
    config = {"application_id": "app", "state_dir": str(tmp_path)}  # the default record cache: caching on
    with TopologyTestDriver(builder, config) as driver, pytest.raises(RecordProcessingError) as info:
        driver.create_input_topic(topic, "str", "str").pipe_input(key, value, 5)
    assert isinstance(info.value.cause, ValueError)
    assert not info.value.production
    return info.value


def test_a_map_values_below_a_cached_table_names_itself(tmp_path: Path) -> None:
    builder = StreamsBuilder()
    builder.table("in", "str", "str", "tstore").map_values(_no_bad, name=CHECK).to_stream().to("out")
    error = _driver_error(builder, "in", "k", "bad", tmp_path)
    assert error.node == CHECK
    assert f"processor {CHECK} raised ValueError" in str(error) and "in-0@0" in str(error)


def test_a_map_values_below_a_cached_aggregation_names_itself(tmp_path: Path) -> None:
    builder = StreamsBuilder()
    counts = builder.stream("in", "str", "str").group_by_key(key_serde="str", value_serde="str").count("counts")
    counts.map_values(lambda n: _no_bad("bad"), name=CHECK).to_stream().to("out")
    assert _driver_error(builder, "in", "k", "w", tmp_path).node == CHECK


def test_a_foreign_key_extractor_below_a_cached_table_names_itself(tmp_path: Path) -> None:
    builder = StreamsBuilder()
    customers = builder.table("customers", "str", "str", "customers-store")
    orders = builder.table("orders", "str", "str", "orders-store")
    orders.join(customers, _no_bad, lambda o, c: o, table_joined=TableJoined.as_("fk")).to_stream().to("out")
    error = _driver_error(builder, "orders", "o1", "bad", tmp_path)
    assert error.node == "fk-subscription-registration-processor"


@pytest.mark.parametrize(
    "windows", [TimeWindows.of_size_with_no_grace(10), SessionWindows.of_inactivity_gap_with_no_grace(10)]
)
def test_a_map_values_below_a_cached_windowed_count_names_itself(windows: Any, tmp_path: Path) -> None:
    builder = StreamsBuilder()
    grouped = builder.stream("in", "str", "str").group_by_key(key_serde="str", value_serde="str")
    counts = grouped.windowed_by(windows).count("counts")
    counts.map_values(lambda n: _no_bad("bad"), name=CHECK).to_stream().to("out")
    assert _driver_error(builder, "in", "k", "w", tmp_path).node == CHECK


def test_a_store_cache_evicting_while_a_record_is_processed_names_the_node_below(tmp_path: Path) -> None:
    """An eviction flushes within `process()`: the error names the node below the store, not the store's."""
    builder = StreamsBuilder()
    builder.table("in", "str", "str", "tstore").map_values(_no_bad, name=CHECK).to_stream().to("out")
    config = {"application_id": "app", "state_dir": str(tmp_path), "statestore_cache_max_bytes": 1}
    with TopologyTestDriver(builder, config) as driver, pytest.raises(RecordProcessingError) as info:
        driver.create_input_topic("in", "str", "str").pipe_input("k", "bad", 5)
    assert info.value.node == CHECK


def test_the_driver_skips_a_flushed_record_its_handler_skips_and_goes_on(tmp_path: Path) -> None:
    config = {"application_id": "app", "state_dir": str(tmp_path), "processing_exception_handler": "log_and_continue"}
    with TopologyTestDriver(_counts_checked(), config) as driver:
        words = driver.create_input_topic(INPUT, "str", "str")
        for key in ("a", "b", "b", "c", "b"):  # the driver commits after each record: b's count 2 fails
            words.pipe_input(key, "w", 5)
        out = driver.create_output_topic(OUTPUT, "str", "int64").read_key_values_to_list()
        assert out == [("a", 1), ("b", 1), ("c", 1), ("b", 3)]
        changelog = driver.create_output_topic(CHANGELOG, "str", "int64").read_key_values_to_list()
        assert changelog == [("a", 1), ("b", 1), ("b", 2), ("c", 1), ("b", 3)]  # b's 2 was written, then forwarded
        assert driver.dropped_records_by_processor() == {CHECK: 1}


def test_the_driver_dead_letters_a_flushed_record_as_its_headers(tmp_path: Path) -> None:
    config = {
        "application_id": "app",
        "state_dir": str(tmp_path),
        "processing_exception_handler": "dead_letter",
        "dead_letter_topic": "dead-letters",
    }
    with TopologyTestDriver(_counts_checked(), config) as driver:
        words = driver.create_input_topic(INPUT, "str", "str")
        words.pipe_input("b", "w", 5)
        words.pipe_input("b", "w", 6)
        assert driver.read_raw("dead-letters") == (None, b"", 6)
        assert driver.create_output_topic(OUTPUT, "str", "int64").read_key_values_to_list() == [("b", 1)]


def test_the_driver_skips_an_input_record_its_handler_skips(tmp_path: Path) -> None:
    builder = StreamsBuilder()
    builder.stream("in", "str", "str").map_values(_no_bad, name=CHECK).to("out")
    config = {"application_id": "app", "state_dir": str(tmp_path), "processing_exception_handler": "log_and_continue"}
    with TopologyTestDriver(builder, config) as driver:
        driver.create_input_topic("in", "str", "str").pipe_key_value_list([("k", "ok"), ("k", "bad"), ("k", "fine")])
        assert driver.create_output_topic("out", "str", "str").read_key_values_to_list() == [("k", "ok"), ("k", "fine")]
        assert driver.dropped_records_by_processor() == {CHECK: 1}


# ---- the worker: the task manager's commit flushes the caches ----------------------------------------------------


@pytest.fixture
def harness(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Harness]:
    h = Harness(new_kafka(), tmp_path, topology=_counts_checked(), **getattr(request, "param", {}))
    yield h
    h.close()


async def _count(h: Harness, *keys: str, timestamp: int = 10) -> None:
    for key in keys:
        h.kafka.append(IN0, key.encode(), b"w", timestamp)
    await h.poll_and_process()


async def _running(h: Harness) -> None:
    h.assign(T0)
    await h.task_manager.restore(timeout_ms=0)
    assert h.task_manager.active[T0].state is TaskState.RUNNING


async def test_the_worker_fails_naming_the_node_below_the_cache(harness: Harness) -> None:
    await _running(harness)
    await _count(harness, "a", "b", "b")  # cached: the counts reach `check` at the commit
    with pytest.raises(ProcessingFailure) as info:
        await harness.task_manager.commit()
    message = str(info.value)
    assert f"processor {CHECK} raised ValueError('no twos: 2')" in message
    assert "task 0_0" in message and "processing_exception_handler='fail'" in message


@pytest.mark.parametrize("harness", [{"processing_exception_handler": "log_and_continue"}], indirect=True)
async def test_the_worker_continues_past_a_flushed_record_its_handler_skips(
    harness: Harness, monkeypatch: pytest.MonkeyPatch
) -> None:
    handler = harness.resources.handlers.processing
    seen: list[tuple[TaskId, ConsumerRecord[Any, Any], BaseException, str | None]] = []
    original = handler.handle

    def handle(task_id: TaskId, record: ConsumerRecord[Any, Any], exc: BaseException, node: str | None = None) -> None:
        seen.append((task_id, record, exc, node))
        original(task_id, record, exc, node)

    monkeypatch.setattr(handler, "handle", handle)
    await _running(harness)
    await _count(harness, "a", "b", "b", "c")  # b's count, 2, fails in `check`; a's and c's are flushed after it

    await harness.task_manager.commit()

    assert latest(harness.kafka, OUTPUT) == {"a": 1, "c": 1}  # b's record dropped, the rest of the flush went on
    # the store and its changelog have b's count: Kafka writes a flushed entry before it forwards it
    assert latest(harness.kafka, CHANGELOG) == {"a": 1, "b": 2, "c": 1}
    store = harness.task_manager.active[T0].stores["counts"]
    assert store.get(b"b") is not None and struct.unpack(">q", store.get(b"b")[-8:])[0] == 2
    assert harness.kafka.committed[IN0] == 4  # the commit went through

    ((task_id, record, exc, node),) = seen
    assert task_id == T0 and node == CHECK and str(exc) == "no twos: 2"
    # the record context of the flush: the task's input partition, at the last record it processed (Kafka gives
    # the offset of the record that last wrote the entry; streamlet's cache keeps none per entry)
    assert (record.topic, record.partition, record.offset) == (INPUT, 0, 3)
    assert record.key is None and record.value is None  # no raw input record: the flushed one is not one
    assert handler.skipped == 1
    assert harness.task_manager.active[T0].graph.dropped.counts == {(CHECK, "processing-error"): 1}

    await _count(harness, "b", "d")  # processing goes on: b's next count passes
    await harness.task_manager.commit()
    assert latest(harness.kafka, OUTPUT) == {"a": 1, "b": 3, "c": 1, "d": 1}
    assert handler.skipped == 1


@pytest.mark.parametrize(
    "harness", [{"processing_exception_handler": "dead_letter", "dead_letter_topic": "dead-letters"}], indirect=True
)
async def test_a_flushed_record_dead_lettered_is_its_headers(harness: Harness) -> None:
    """No raw input record was forwarded: the dead letter says what failed where, in its KIP-1034 headers."""
    await _running(harness)
    await _count(harness, "b", "b", "a")
    await harness.task_manager.commit()
    assert latest(harness.kafka, OUTPUT) == {"a": 1}
    ((key, value, headers),) = [(k, v, dict(h)) for k, v, h in harness.kafka.dead_letters]
    assert key is None and value == b""
    assert headers["__streamlet.errors.processor"] == CHECK.encode()
    assert headers["__streams.errors.exception"] == b"ValueError"
    assert headers["__streams.errors.topic"] == INPUT.encode() and headers["__streams.errors.offset"] == b"2"


async def test_a_pre_aggregation_partial_too_large_to_send_at_the_commit_goes_to_the_production_handler() -> None:
    """A pre-aggregation sends its partials when the task flushes: one too large is skipped, the others go."""
    builder = StreamsBuilder()
    grouped = builder.stream("in", "str", "str").group_by(lambda k, v: v, key_serde="str", value_serde="str")
    grouped.reduce(lambda a, b: a + b, name="joined", pre_aggregate=True).to_stream().to("out")
    topology = builder.build()
    repartition = "app-KSTREAM-REDUCE-STATE-STORE-0000000002-repartition"
    kafka = FakeKafka({"in": 1, repartition: 1})
    collector = RecordCollector(FakeProducer(kafka), (), max_record_bytes=1_000)  # type: ignore[arg-type]
    handlers = ThreadHandlers(collector, production="continue")
    task = StreamTask(T0, frozenset({IN0}), TopicNames(topology, "app"), None, collector, handlers)
    for value in (b"A", b"X" * 600, b"B"):  # the second partial's key and value are 1,200 bytes
        kafka.append(IN0, b"k", value, 7)
    task.process(IN0, kafka.records(IN0))
    assert not any(tp.topic == repartition for tp in kafka.logs)  # the partials wait for the commit

    task.flush_caches()
    await collector.flush()

    assert [v for tp, log in kafka.logs.items() if tp.topic == repartition for _, v, _ in log] == [b"A", b"B"]
    assert handlers.production.skipped == 1 and handlers.processing.skipped == 0
    assert task.graph.dropped.counts == {("KSTREAM-SINK-0000000004", "production-error"): 1}

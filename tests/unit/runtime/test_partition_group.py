"""A task with several input partitions takes the head record with the smallest timestamp first, waits for empty
partitions as KIP-695 says (`max_task_idle_ms`), pauses full queues, and never loses a buffered record.

The task reads topics `a` and `b` (one partition each) and writes what it processes to `out` (merge) or joins
`a`'s orders with `b`'s customers (stream-table join). Expected outputs are written by hand from the timestamps.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any, Protocol

import pytest
from aiokafka.structs import TopicPartition

from streamlet.runtime import task_manager
from streamlet.topology import StreamsBuilder, Topology
from streamlet.topology.timestamps import ConsumedRecord
from tests.unit.runtime._fakes import FakeKafka
from tests.unit.runtime._harness import T0, Harness

A0, B0, OUT0 = TopicPartition("a", 0), TopicPartition("b", 0), TopicPartition("out", 0)
SOURCES = {"a": 1, "b": 1}


def _merge() -> Topology:
    builder = StreamsBuilder()
    builder.stream("a", "str", "str").merge(builder.stream("b", "str", "str")).to("out", "str", "str")
    return builder.build()


def _join() -> Topology:
    builder = StreamsBuilder()
    customers = builder.table("b", "str", "str", "customers")
    builder.stream("a", "str", "str").left_join(customers, lambda o, c: f"{o}|{c}").to("out", "str", "str")
    return builder.build()


def _kafka() -> FakeKafka:
    return FakeKafka({"a": 1, "b": 1, "out": 1, "app-customers-changelog": 1})


def _append(kafka: FakeKafka, tp: TopicPartition, *records: tuple[str, int]) -> None:
    for value, timestamp in records:
        kafka.append(tp, b"k", value.encode(), timestamp)


def _out(kafka: FakeKafka) -> list[str]:
    return [value.decode() for _, value, _ in kafka.logs.get(OUT0, []) if value is not None]


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """The task manager's wall clock, set by the test."""
    now = [1_000_000]
    monkeypatch.setattr(task_manager, "system_time_ms", lambda: now[0])
    yield now


class _Make(Protocol):
    def __call__(self, topology: Topology | None = None, **overrides: Any) -> Harness: ...


@pytest.fixture
def make(tmp_path: Path) -> Iterator[_Make]:
    """A harness running the one task of `topology` (default: the merge) over `a` and `b`."""
    made: list[Harness] = []

    def make(topology: Topology | None = None, **overrides: Any) -> Harness:
        topology = _merge() if topology is None else topology
        harness = Harness(_kafka(), tmp_path / f"h{len(made)}", topology=topology, sources=SOURCES, **overrides)
        harness.assign(T0)
        made.append(harness)
        return harness

    yield make
    for harness in made:
        harness.close()


async def test_the_head_with_the_smallest_timestamp_goes_first_across_partitions(make: _Make) -> None:
    h = make()
    _append(h.kafka, A0, ("a5", 5), ("a10", 10))
    _append(h.kafka, B0, ("b1", 1), ("b7", 7))
    await h.poll_and_process()  # one fetch: a's records come first in it
    assert _out(h.kafka) == ["b1", "a5", "b7", "a10"]
    assert h.task_manager.active[T0].committable_offsets()[A0].offset == 2


async def test_an_order_fetched_before_an_earlier_customer_update_is_joined_with_it(make: _Make) -> None:
    h = make(_join())
    await h.task_manager.restore(timeout_ms=0)  # the customers store restores (empty changelog): RUNNING
    _append(h.kafka, A0, ("order-1", 20))
    _append(h.kafka, B0, ("alice", 10))
    await h.poll_and_process()
    assert _out(h.kafka) == ["order-1|alice"]


async def test_a_partition_not_fetched_yet_makes_the_task_wait(make: _Make) -> None:
    h = make()
    _append(h.kafka, A0, ("a5", 5), ("a10", 10))
    _append(h.kafka, B0, ("b1", 1))
    await h.poll_and_process(max_records=2)  # the fetch filled up with a's records: b's lag is unknown
    assert _out(h.kafka) == []
    assert h.task_manager.active[T0].committable_offsets() == {}  # nothing processed, nothing to commit
    await h.poll_and_process()
    assert _out(h.kafka) == ["b1", "a5", "a10"]


async def test_records_known_to_be_on_the_broker_are_waited_for(make: _Make) -> None:
    h = make()
    _append(h.kafka, A0, ("a10", 10))
    _append(h.kafka, B0, ("b1", 1), ("b2", 2), ("b20", 20))
    await h.poll_and_process(max_records=2)  # a10 and b1; b's lag is 2
    assert _out(h.kafka) == ["b1"]  # then b is empty with records on the broker: a10 waits
    await h.poll_and_process()
    assert _out(h.kafka) == ["b1", "b2", "a10", "b20"]


async def test_a_caught_up_empty_partition_is_waited_for_until_the_idle_deadline(make: _Make, clock: list[int]) -> None:
    h = make(max_task_idle_ms=100)
    _append(h.kafka, A0, ("a5", 5))
    await h.poll_and_process()  # b fetched empty: lag 0, deadline now + 100
    assert _out(h.kafka) == []
    assert h.task_manager.ms_until_idle_deadline() == 100  # the thread polls no longer than that
    clock[0] += 99
    assert h.task_manager.process({}) == 0
    assert h.task_manager.ms_until_idle_deadline() == 1
    clock[0] += 1
    assert h.task_manager.process({}) == 1  # enforced, without a new fetch
    await h.collector.drain()
    assert _out(h.kafka) == ["a5"]
    assert h.task_manager.ms_until_idle_deadline() is None


async def test_a_record_that_arrives_before_the_idle_deadline_goes_first(make: _Make, clock: list[int]) -> None:
    h = make(max_task_idle_ms=100)
    _append(h.kafka, A0, ("a5", 5))
    await h.poll_and_process()
    clock[0] += 50
    _append(h.kafka, B0, ("b3", 3))
    await h.poll_and_process()
    assert _out(h.kafka) == ["b3"]  # then b is empty again: a5 waits another max_task_idle_ms for it
    clock[0] += 100
    h.task_manager.process({})
    await h.collector.drain()
    assert _out(h.kafka) == ["b3", "a5"]


async def test_by_default_a_caught_up_empty_partition_is_not_waited_for(make: _Make) -> None:
    h = make()  # max_task_idle_ms=0
    _append(h.kafka, A0, ("a5", 5))
    await h.poll_and_process()
    assert _out(h.kafka) == ["a5"]


async def test_max_task_idle_ms_minus_one_never_waits(make: _Make) -> None:
    h = make(max_task_idle_ms=-1)
    _append(h.kafka, A0, ("a5", 5), ("a10", 10))
    _append(h.kafka, B0, ("b1", 1))
    await h.poll_and_process(max_records=2)  # b's lag unknown: processed anyway
    assert _out(h.kafka) == ["a5", "a10"]
    await h.poll_and_process()
    assert _out(h.kafka) == ["a5", "a10", "b1"]


async def test_a_full_queue_pauses_its_partition_until_it_drains(make: _Make) -> None:
    h = make(buffered_records_per_partition=2)
    _append(h.kafka, A0, *[(f"a{t}", t) for t in range(10, 15)])
    _append(h.kafka, B0, ("b100", 100))
    await h.poll_and_process(max_records=5)  # a's 5 records; b not fetched: a waits, with 5 > 2 queued
    assert h.consumer.paused == {A0}
    assert _out(h.kafka) == []
    await h.poll_and_process()  # a is paused: only b is fetched
    assert _out(h.kafka) == ["a10", "a11", "a12", "a13", "a14", "b100"]
    assert h.consumer.paused == set()


async def test_buffered_records_are_fetched_again_after_a_revocation(make: _Make) -> None:
    h = make()
    _append(h.kafka, A0, ("a1", 1), ("a5", 5))
    _append(h.kafka, B0, ("b3", 3), ("b9", 9))
    await h.poll_and_process(max_records=3)  # a1 a5 b3 fetched, b's lag 1: a1 b3 processed, a5 buffered
    assert _out(h.kafka) == ["a1", "b3"]
    await h.task_manager.handle_revocation(h.consumer.assignment())
    assert h.kafka.committed == {A0: 1, B0: 1}  # processed records only
    assert (A0, 1) in h.consumer.seeks  # the consumer goes back to the buffered a5
    h.assign(T0)  # the task comes back (suspended -> running), positions from the commit
    await h.poll_and_process()
    assert _out(h.kafka) == ["a1", "b3", "a5", "b9"]


async def test_a_closed_task_rewinds_the_consumer_to_its_first_buffered_record(make: _Make) -> None:
    h = make(buffered_records_per_partition=1)
    _append(h.kafka, A0, ("a1", 1), ("a5", 5))
    await h.poll_and_process(max_records=2)  # b not fetched: both of a wait, a paused
    assert h.consumer.paused == {A0}
    await h.task_manager.handle_lost_all("test")
    assert h.consumer.seeks == [(A0, 0)]
    assert h.consumer.paused == set()
    assert await h.consumer.position(A0) == 0


def _from_value(record: ConsumedRecord, partition_time: int) -> int:
    """The event time written in the value ("name@time"), whatever the record's own timestamp."""
    return int(record.value.split("@")[1])


async def test_with_a_timestamp_extractor_the_extracted_timestamps_decide(make: _Make) -> None:
    h = make(timestamp_extractor=_from_value)
    _append(h.kafka, A0, ("a@5", 1), ("a@10", 2))  # record timestamps say a goes first; the values say not
    _append(h.kafka, B0, ("b@1", 3), ("b@7", 4))
    await h.poll_and_process()
    assert _out(h.kafka) == ["b@1", "a@5", "b@7", "a@10"]
    assert [ts for _, _, ts in h.kafka.logs[OUT0]] == [1, 5, 7, 10]  # the source extracted the same again

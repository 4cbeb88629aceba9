"""RecordCollector: where a record goes when its sink has a `StreamPartitioner` (a deferred partition, chosen
with the topic's partition count when the records are handed to the producer)."""

from __future__ import annotations

import time

import pytest
from aiokafka.errors import ProducerFenced
from aiokafka.partitioner import murmur2
from aiokafka.producer.transaction_manager import TransactionState
from aiokafka.structs import TopicPartition

from streamlet.runtime.record_collector import ProductionError, RecordCollector, RetriableProductionError
from tests.unit.runtime._fakes import FakeKafka, FakeProducer

TOPIC = "subscriptions"


def _collector(kafka: FakeKafka) -> RecordCollector:
    return RecordCollector(FakeProducer(kafka), ())  # type: ignore[arg-type]


def _keys_by_partition(kafka: FakeKafka, partitions: int) -> dict[int, list[bytes | None]]:
    return {p: [key for key, _, _ in kafka.logs.get(TopicPartition(TOPIC, p), [])] for p in range(partitions)}


async def test_a_deferred_partition_is_chosen_with_the_partition_count_and_none_is_the_default() -> None:
    kafka = FakeKafka({TOPIC: 5})
    collector = _collector(kafka)
    counts: list[int] = []

    def last_partition(num_partitions: int) -> int:
        counts.append(num_partitions)
        return num_partitions - 1

    collector.send(TOPIC, b"a", b"1", 0, last_partition)
    collector.send(TOPIC, b"b", b"2", 0, lambda num_partitions: None)
    collector.send(TOPIC, b"c", b"3", 0, 1)
    await collector.drain()
    await collector.flush()
    default = (murmur2(b"b") & 0x7FFFFFFF) % 5  # the Java producer's placement of key b
    expected: dict[int, list[bytes | None]] = {p: [] for p in range(5)}
    expected[4].append(b"a")
    expected[default].append(b"b")
    expected[1].append(b"c")
    assert counts == [5]
    assert _keys_by_partition(kafka, 5) == expected


@pytest.mark.parametrize("partition", [3, -1, "0", True])
async def test_a_partitioner_choosing_no_partition_of_the_topic_stops_the_task(partition: object) -> None:
    collector = _collector(FakeKafka({TOPIC: 3}))
    collector.send(TOPIC, b"a", b"1", 0, lambda num_partitions: partition)  # type: ignore[arg-type, return-value]
    with pytest.raises(ProductionError, match=r"returned .*, not a partition in \[0, 2\]"):
        await collector.drain()


async def test_a_failing_partitioner_stops_the_task() -> None:
    collector = _collector(FakeKafka({TOPIC: 3}))
    collector.send(TOPIC, b"a", b"1", 0, lambda num_partitions: 1 // 0)
    with pytest.raises(ProductionError, match="the partitioner of a record for topic subscriptions failed"):
        await collector.drain()


async def test_after_a_commit_that_failed_for_good_the_next_transaction_runs_on_a_new_producer() -> None:
    """A commit that fails for good (here fenced) leaves aiokafka's transaction manager in FATAL_ERROR, from
    which it begins no transaction: an AssertionError that stopped a worker in the broker-failover chaos test.
    As Kafka Streams resets its thread producer, the collector takes a new one with the same transactional id."""
    kafka = FakeKafka({TOPIC: 1})
    producers = [FakeProducer(kafka, "app-t1")]

    def new_producer() -> FakeProducer:
        producers.append(FakeProducer(kafka, "app-t1"))
        return producers[-1]

    collector = RecordCollector(
        producers[0],  # type: ignore[arg-type]
        (),
        transactional=True,
        producer_factory=new_producer,  # type: ignore[arg-type]
    )
    producers[0].commit_error = ProducerFenced()
    producers[0].commit_error_state = TransactionState.FATAL_ERROR
    collector.send(TOPIC, b"a", b"1", 0, 0)
    with pytest.raises(ProducerFenced):
        await collector.commit_transaction({}, "app")
    collector.send(TOPIC, b"b", b"2", 0, 0)
    await collector.commit_transaction({}, "app")
    assert len(producers) == 2
    assert [key for key, _, _ in kafka.logs[TopicPartition(TOPIC, 0)]] == [b"b"]  # the failed one's record is gone


class FreezesAfterTheFirstBatch(FakeProducer):
    """The process freezes (and wakes) while the first partition's batch is being handed over."""

    def __init__(self, kafka: FakeKafka) -> None:
        super().__init__(kafka)
        self.woke_at = float("-inf")

    async def send_batch(self, batch, topic, *, partition):  # type: ignore[no-untyped-def]
        future = await super().send_batch(batch, topic, partition=partition)
        self.woke_at = time.monotonic()
        return future


async def test_a_hand_over_interrupted_by_a_freeze_sends_nothing_more_and_the_next_flush_says_so() -> None:
    """At-least-once: what the thread computed before a freeze past the session timeout is not sent after it
    (kafka/freeze_gate.py holds back what already reached the producer); the lost path forgets the failure."""
    kafka = FakeKafka({TOPIC: 2})
    producer = FreezesAfterTheFirstBatch(kafka)
    collector = RecordCollector(producer, (), froze_after=lambda moment: producer.woke_at > moment)  # type: ignore[arg-type]
    collector.send(TOPIC, b"a", b"1", 0, 0)
    collector.send(TOPIC, b"b", b"2", 0, 1)
    await collector.drain()
    assert [tp.partition for tp in kafka.logs] == [0]  # partition 1's records were computed before the freeze
    with pytest.raises(RetriableProductionError, match="froze for longer than the session timeout"):
        await collector.flush()
    collector.send(TOPIC, b"a", b"3", 0, 0)
    collector.discard()  # the lost path: nothing of the lost tasks is written, their failure is forgotten
    await collector.flush()

"""`streamlet.kafka.group` on the real broker: seed 003's picture (A and B consume, C joins) under both
protocols, positions of kept partitions surviving a cooperative rebalance, and generation fencing of commits."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable
from dataclasses import dataclass, field

import pytest
from aiokafka.errors import CommitFailedError
from aiokafka.structs import OffsetAndMetadata, TopicPartition

from streamlet.kafka.group.consumer import GroupConsumer, _InPlaceOwnership
from streamlet.kafka.group.consumer_protocol import RebalanceProtocol
from tests.support.group import RecordingListener, StickyAssignor, group_consumer
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration

PARTITIONS = 6


@dataclass
class Member:
    consumer: GroupConsumer
    listener: RecordingListener
    offsets: dict[TopicPartition, list[int]] = field(default_factory=dict)

    def owned(self) -> set[TopicPartition]:
        return set(self.consumer.assignment())

    def events_since(self, mark: int) -> list[tuple[str, frozenset[TopicPartition]]]:
        return [e for e in self.listener.events[mark:] if e[1]]


@contextlib.asynccontextmanager
async def member(kafka: KafkaTestCluster, topic: str, group: str, protocol: RebalanceProtocol) -> AsyncIterator[Member]:
    consumer = group_consumer(kafka.bootstrap_servers, group, protocol=protocol)
    await consumer.start()
    m = Member(consumer, RecordingListener())
    consumer.subscribe([topic], m.listener, StickyAssignor())

    async def poll() -> None:
        while True:
            batch = await consumer.getmany(timeout_ms=100)
            for tp, records in batch.items():
                m.offsets.setdefault(tp, []).extend(r.offset for r in records)

    task = asyncio.create_task(poll())
    try:
        yield m
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        await consumer.stop()


async def produce(kafka: KafkaTestCluster, topic: str, per_partition: int) -> None:
    await produce_to(kafka, topic, range(PARTITIONS), per_partition)


async def produce_to(kafka: KafkaTestCluster, topic: str, partitions: Iterable[int], per_partition: int) -> None:
    for p in partitions:
        await kafka.produce(topic, [(b"k", b"v")] * per_partition, partition=p)


@pytest.mark.parametrize("protocol", [RebalanceProtocol.COOPERATIVE, RebalanceProtocol.EAGER])
async def test_a_third_member_joins(kafka: KafkaTestCluster, protocol: RebalanceProtocol) -> None:
    """Seed 003: under cooperative only the partitions that move leave A or B, in two rounds, and what A and B
    keep is never revoked nor read twice; under eager A and B give up everything and read kept partitions again
    from the (never committed) start."""
    topic = await kafka.create_topic("members", partitions=PARTITIONS)
    group = unique_name("membership")
    async with member(kafka, topic, group, protocol) as a, member(kafka, topic, group, protocol) as b:
        await wait_until(lambda: len(a.owned()) == 3 and len(b.owned()) == 3, "A and B to share the partitions")
        # Produced only now: had A read before B joined, eager A would read its kept partitions twice.
        await produce(kafka, topic, 5)
        await wait_until(lambda: sum(len(o) for o in (a.offsets | b.offsets).values()) == 5 * PARTITIONS, "all read")
        marks = (len(a.listener.events), len(b.listener.events))
        before = (a.owned(), b.owned())
        generation = a.consumer.group_metadata().generation_id
        async with member(kafka, topic, group, protocol) as c:
            await wait_until(
                lambda: len(c.owned()) == 2 and len(a.owned()) == 2 and len(b.owned()) == 2, "C to take two"
            )
            await produce(kafka, topic, 1)
            await wait_until(  # each partition's owner has read the new record (offset 5): eager ones re-read first
                lambda: [m.offsets.get(tp, [])[-1:] for m in (a, b, c) for tp in m.owned()] == [[5]] * PARTITIONS,
                "new records",
            )
            moved = (before[0] - a.owned(), before[1] - b.owned())
            if protocol is RebalanceProtocol.COOPERATIVE:  # eager members report nothing owned: nothing sticks
                assert moved[0] | moved[1] == c.owned()
            for m, mark, old, gone in ((a, marks[0], before[0], moved[0]), (b, marks[1], before[1], moved[1])):
                if protocol is RebalanceProtocol.COOPERATIVE:
                    assert m.events_since(mark) == ([("revoked", frozenset(gone))] if gone else [])
                    for tp in old - gone:  # kept: read once, in order, across both rounds
                        assert m.offsets[tp] == list(range(6)), tp
                else:
                    assert ("revoked", frozenset(old)) in m.events_since(mark)
            if protocol is RebalanceProtocol.COOPERATIVE:
                # C's partitions came in the second round, after A and B revoked them
                assert c.consumer.group_metadata().generation_id == generation + 2
            else:
                kept_and_reread = [tp for m in (a, b) for tp in m.owned() if m.offsets[tp][:5] == m.offsets[tp][5:10]]
                assert kept_and_reread  # eager forgot their positions: read again from the reset offset


async def test_commits_are_fenced_by_generation_and_read_back_with_metadata(kafka: KafkaTestCluster) -> None:
    topic = await kafka.create_topic("fenced", partitions=2)
    group = unique_name("fencing")
    tp = TopicPartition(topic, 0)
    async with member(kafka, topic, group, RebalanceProtocol.COOPERATIVE) as a:
        await wait_until(lambda: tp in a.owned(), "A to own the topic")
        await a.consumer.commit({tp: OffsetAndMetadata(3, "meta")})
        assert await a.consumer.committed_offsets([tp]) == {tp: OffsetAndMetadata(3, "meta")}
        stale = a.consumer.membership.generation  # type: ignore[union-attr]
        async with member(kafka, topic, group, RebalanceProtocol.COOPERATIVE) as b:
            await wait_until(lambda: len(a.owned()) == 1 and len(b.owned()) == 1, "A and B to share")
            zombie = a.consumer.membership
            assert zombie is not None
            zombie.generation = stale  # what a member that slept through the rebalance still believes
            with pytest.raises(CommitFailedError):
                await a.consumer.commit({tp: OffsetAndMetadata(9, "")})
            assert zombie.generation_lost()
            assert await b.consumer.committed_offsets([tp]) == {tp: OffsetAndMetadata(3, "meta")}


async def test_records_buffered_for_a_revoked_partition_are_dropped(kafka: KafkaTestCluster) -> None:
    """The fetcher may hold records of a partition the membership then revokes (a cooperative revocation lands
    between a fetch and the thread's next `getmany`): they are dropped with the partition, and `getmany` goes on
    with the partitions kept (it used to fail on aiokafka's assertion that the revoked partition has a position)."""
    topic = await kafka.create_topic("buffered", partitions=2)
    await produce_to(kafka, topic, [0, 1], 5)
    consumer = group_consumer(kafka.bootstrap_servers, unique_name("buffered"))
    await consumer.start()
    try:
        kept, revoked = TopicPartition(topic, 0), TopicPartition(topic, 1)
        ownership = _InPlaceOwnership(consumer)
        ownership.assign([kept, revoked], {kept: 0, revoked: 0})
        # a fetch response sets the high watermark and buffers the records in one step
        await wait_until(lambda: consumer.highwater(revoked) is not None, "a fetch of the partition to be revoked")
        ownership.assign([kept], {})
        got: dict[TopicPartition, list[int]] = {}
        while len(got.get(kept, [])) < 5:
            for tp, records in (await consumer.getmany(timeout_ms=200)).items():
                got.setdefault(tp, []).extend(r.offset for r in records)
        assert got == {kept: [0, 1, 2, 3, 4]}
    finally:
        await consumer.stop()

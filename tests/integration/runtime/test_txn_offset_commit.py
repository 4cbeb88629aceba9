"""TxnOffsetCommit v3 on the real broker (KIP-447): a transaction's input offsets commit only for the group's
current member; a stale generation or an unknown member is refused, and the transaction aborts."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.errors import CommitFailedError
from aiokafka.structs import OffsetAndMetadata, TopicPartition

from streamlet.kafka import txn_offset_commit
from streamlet.kafka.group.consumer import GroupConsumer
from streamlet.kafka.txn_offset_commit import GroupMetadata, set_group_metadata
from tests.support.group import RecordingListener, StickyAssignor, group_consumer
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration


async def joined_member(kafka: KafkaTestCluster, topic: str, group: str) -> GroupConsumer:
    consumer = group_consumer(kafka.bootstrap_servers, group)
    await consumer.start()
    consumer.subscribe([topic], RecordingListener(), StickyAssignor())
    await wait_until(lambda: bool(consumer.assignment()), "the consumer to join", timeout=30)
    return consumer


async def committed(kafka: KafkaTestCluster, group: str, tp: TopicPartition) -> int | None:
    consumer = AIOKafkaConsumer(bootstrap_servers=kafka.bootstrap_servers, group_id=group)
    await consumer.start()
    try:
        return await consumer.committed(tp)
    finally:
        await consumer.stop()


async def offsets_in_a_transaction(
    kafka: KafkaTestCluster, group: str, tp: TopicPartition, meta: GroupMetadata
) -> None:
    txn_offset_commit.install()
    producer = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap_servers, transactional_id=unique_name("txn"))
    await producer.start()
    try:
        await producer.begin_transaction()
        set_group_metadata(producer, meta)
        try:
            await producer.send_offsets_to_transaction({tp: OffsetAndMetadata(7, "")}, group)
        except CommitFailedError:
            await producer.abort_transaction()
            raise
        await producer.commit_transaction()
    finally:
        await producer.stop()


async def test_the_current_member_commits_and_a_stale_one_is_fenced(kafka: KafkaTestCluster) -> None:
    topic = await kafka.create_topic("txn-input", partitions=1)
    tp = TopicPartition(topic, 0)
    group = unique_name("txn-group")
    consumer = await joined_member(kafka, topic, group)
    try:
        current = consumer.group_metadata()
        assert current.generation_id > 0 and current.member_id

        stale = GroupMetadata(current.generation_id - 1, current.member_id, None)
        with pytest.raises(CommitFailedError, match="IllegalGeneration"):
            await offsets_in_a_transaction(kafka, group, tp, stale)
        with pytest.raises(CommitFailedError, match="UnknownMemberId"):
            await offsets_in_a_transaction(kafka, group, tp, GroupMetadata(current.generation_id, "zombie", None))
        assert await committed(kafka, group, tp) is None

        await offsets_in_a_transaction(kafka, group, tp, current)
        await asyncio.sleep(0.5)
        assert await committed(kafka, group, tp) == 7
    finally:
        await consumer.stop()

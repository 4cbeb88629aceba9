"""OffsetFetch with require_stable on the real broker (KIP-447): while a transaction holds pending offsets
for a partition, an exactly-once member waits for it to complete, where a fetch without require_stable answers
at once with the offset from before the transaction."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator

import pytest
from aiokafka import AIOKafkaProducer
from aiokafka.structs import OffsetAndMetadata, TopicPartition

from tests.support.group import group_consumer
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration


async def committed(kafka: KafkaTestCluster, group: str, tp: TopicPartition, *, stable: bool) -> int | None:
    consumer = group_consumer(kafka.bootstrap_servers, group, stable=stable)
    await consumer.start()
    try:
        offsets = await consumer.committed_offsets([tp])
        return offsets[tp].offset if tp in offsets else None
    finally:
        await consumer.stop()


@contextlib.asynccontextmanager
async def pending_offset(kafka: KafkaTestCluster) -> AsyncIterator[tuple[AIOKafkaProducer, TopicPartition, str]]:
    """An open transaction holding offset 7 of a fresh partition for a fresh group: (producer, partition, group)."""
    topic = await kafka.create_topic("stable-offsets", partitions=1)
    tp, group = TopicPartition(topic, 0), unique_name("stable-group")
    producer = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap_servers, transactional_id=unique_name("txn"))
    await producer.start()
    try:
        await producer.begin_transaction()
        await producer.send_offsets_to_transaction({tp: OffsetAndMetadata(7, "")}, group)
        yield producer, tp, group
    finally:
        await producer.stop()


def _retries(caplog: pytest.LogCaptureFixture, group: str) -> int:
    """How often a fetch of `group` was answered UNSTABLE_OFFSET_COMMIT and retried."""
    return sum(
        r.name == "streamlet.group" and f"OffsetFetch of group {group}:" in r.getMessage() for r in caplog.records
    )


async def test_a_pending_transactional_offset_is_waited_for(
    kafka: KafkaTestCluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="streamlet.group")
    async with pending_offset(kafka) as (producer, tp, group):
        assert await committed(kafka, group, tp, stable=False) is None  # without require_stable: not seen
        waiting = asyncio.create_task(committed(kafka, group, tp, stable=True))
        await wait_until(lambda: _retries(caplog, group) >= 3, "three UNSTABLE_OFFSET_COMMIT answers")
        assert not waiting.done()  # answered UNSTABLE_OFFSET_COMMIT three times, and still waiting

        await producer.commit_transaction()
        assert await asyncio.wait_for(waiting, 30) == 7


async def test_an_aborted_transactions_offset_is_never_seen(
    kafka: KafkaTestCluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="streamlet.group")
    async with pending_offset(kafka) as (producer, tp, group):
        waiting = asyncio.create_task(committed(kafka, group, tp, stable=True))
        await wait_until(lambda: _retries(caplog, group) >= 1, "an UNSTABLE_OFFSET_COMMIT answer")
        await producer.abort_transaction()
        assert await asyncio.wait_for(waiting, 30) is None

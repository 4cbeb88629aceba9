"""kafka/freeze_gate.py on the real broker: a batch handed to the producer before a freeze is failed, not sent;
the producer goes on sending the batches handed over after it."""

from __future__ import annotations

import time

import pytest
from aiokafka import AIOKafkaProducer

from streamlet.kafka.freeze_gate import HandedOverBeforeAFreezeError, refuse_batches_from_before_a_freeze
from tests.support.kafka import KafkaTestCluster

pytestmark = pytest.mark.integration


async def _hand_over(producer: AIOKafkaProducer, topic: str, value: bytes):  # type: ignore[no-untyped-def]
    batch = producer.create_batch()
    batch.append(key=None, value=value, timestamp=None)
    batch.close()
    return await producer.send_batch(batch, topic, partition=0)


async def test_batches_from_before_a_freeze_are_failed_and_later_ones_sent(kafka: KafkaTestCluster) -> None:
    topic = await kafka.create_topic("freeze-gate", partitions=1)
    producer = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap_servers)
    await producer.start()
    woke_at = [time.monotonic() + 3600]  # as if the process woke after every batch handed over from now on
    refuse_batches_from_before_a_freeze(producer, lambda handed_over: woke_at[0] > handed_over)
    try:
        stale = await _hand_over(producer, topic, b"stale")
        with pytest.raises(HandedOverBeforeAFreezeError):
            await stale
        woke_at[0] = time.monotonic()  # the freeze is over: what is handed over now is sent
        fresh = await _hand_over(producer, topic, b"fresh")
        assert (await fresh).offset == 0
        after = await _hand_over(producer, topic, b"after")
        assert (await after).offset == 1
    finally:
        await producer.stop()
    records = await kafka.drain(topic, 1)
    assert [r.value for r in records] == [b"fresh", b"after"]

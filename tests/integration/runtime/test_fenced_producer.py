"""exactly_once_v2 on the real broker: a thread producer fenced while its transaction is open.

A newer producer with the same transactional id (or the coordinator, once the transaction outlived its timeout)
bumps the producer epoch. The old producer learns it when it next adds a partition to its transaction: aiokafka's
sender gets INVALID_PRODUCER_EPOCH, stops, and leaves the transaction manager in its fatal state. aiokafka then
refuses every send with IllegalOperation ("not in transaction"), which is not a KafkaError. The collector must
report it as the fenced transaction it is (Kafka Streams: ProducerFencedException -> TaskMigratedException), so the
thread closes its tasks dirty and rejoins; as an unknown error it stopped a worker in the paused-worker
exactly-once chaos test.
"""

from __future__ import annotations

import pytest
from aiokafka import AIOKafkaProducer

from streamlet.runtime.record_collector import RecordCollector, TransactionFencedError
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.waiting import wait_until

pytestmark = pytest.mark.integration


async def test_a_send_after_the_sender_was_fenced_is_a_fenced_transaction(kafka: KafkaTestCluster) -> None:
    topic = await kafka.create_topic("fenced-out", partitions=2)
    transactional_id = unique_name("fenced")
    old = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap_servers, transactional_id=transactional_id)
    collector = RecordCollector(old, transactional=True)
    await collector.start(transactional_id)
    newer = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap_servers, transactional_id=transactional_id)
    try:
        collector.send(topic, b"k", b"before", None, 0)
        await collector.drain()  # the transaction begins and holds partition 0
        await newer.start()  # InitProducerId: the old producer's epoch is stale from now on
        collector.send(topic, b"k", b"fenced", None, 1)
        await collector.drain()  # accepted locally; the sender's AddPartitionsToTxn is refused
        manager = old._txn_manager
        await wait_until(manager.is_fatal_error, "the old producer's sender to learn it was fenced", timeout=30)

        collector.send(topic, b"k", b"after", None, 0)
        with pytest.raises(TransactionFencedError, match="ProducerFenced"):
            await collector.drain()
    finally:
        await newer.stop()
        await collector.producer.stop()

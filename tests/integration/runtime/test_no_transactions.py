"""exactly_once_v2 against a broker that cannot run transactions (its transaction state log needs three
replicas, and there is one broker): start-up fails within max_block_ms with a message that says so, instead
of hanging at the first commit. The test has a broker of its own, configured that way."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from examples.wordcount.dsl import build_topology
from streamlet.config import StreamsConfig
from streamlet.errors import StreamletError
from streamlet.kafka.broker import LocalBroker
from streamlet.runtime.kafka_streams import KafkaStreams
from tests.support.broker import own_broker
from tests.support.kafka import KafkaTestCluster, unique_name

pytestmark = pytest.mark.integration


@pytest.fixture
def broker_without_transactions(tmp_path: Path) -> Iterator[LocalBroker]:
    with own_broker(tmp_path / "broker", **{"transaction.state.log.replication.factor": "3"}) as broker:
        yield broker


@pytest.fixture
async def cluster(broker_without_transactions: LocalBroker) -> AsyncIterator[KafkaTestCluster]:
    cluster = KafkaTestCluster(broker_without_transactions.bootstrap_servers)
    await cluster.start()
    yield cluster
    await cluster.admin.close()


async def test_exactly_once_start_up_fails_clearly_without_a_transaction_coordinator(
    cluster: KafkaTestCluster, tmp_path: Path
) -> None:
    source = await cluster.create_topic("plaintext", partitions=1)
    sink = await cluster.create_topic("counts", partitions=1)
    client = KafkaStreams(
        build_topology(source, sink),
        StreamsConfig(
            application_id=unique_name("no-txn"),
            bootstrap_servers=cluster.bootstrap_servers,
            state_dir=str(tmp_path / "state"),
            processing_guarantee="exactly_once_v2",
            max_block_ms=5_000,
        ),
    )
    started = time.monotonic()
    with pytest.raises(StreamletError, match="needs transactions.*max_block_ms=5000"):
        await client.start()
    assert time.monotonic() - started < 30
    await client.close()

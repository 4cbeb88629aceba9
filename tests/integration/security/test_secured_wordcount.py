"""WordCount under exactly-once on a SASL_SSL broker (SCRAM) and on a mutual-TLS broker: every client of a worker
(admin, main, restore and admin consumers, transactional producers, the raw TxnOffsetCommit and OffsetFetch
requests, the assignment-history and metrics publishers) connects with the settings, and no log line shows the
password."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from examples.wordcount.dsl import build_topology
from streamlet.config import StreamsConfig
from streamlet.kafka.broker import BrokerStatus
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.runtime.queries import QueryUnavailableError
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.secured import config_of, security_of
from tests.support.wordcount import expected_counts, wait_for_counts

pytestmark = pytest.mark.integration

LINES = ["all streams lead to kafka", "hello kafka streams", "join kafka summit", "secured kafka streams"] * 5


def client_settings(status: BrokerStatus) -> dict[str, str]:
    """The broker's STREAMLET_* client variables as StreamsConfig settings."""
    return config_of(status.client_settings())


@pytest.fixture(params=["sasl_ssl_broker", "mtls_broker"])
def secured_broker(request: pytest.FixtureRequest) -> BrokerStatus:
    status: BrokerStatus = request.getfixturevalue(request.param)
    return status


@pytest.fixture
async def secured_kafka(secured_broker: BrokerStatus) -> AsyncIterator[KafkaTestCluster]:
    kafka = KafkaTestCluster(secured_broker.bootstrap_servers, security_of(client_settings(secured_broker)))
    await kafka.start()
    try:
        yield kafka
    finally:
        await kafka.close()


async def test_exactly_once_wordcount_and_a_query_on_a_secured_broker(
    secured_broker: BrokerStatus, secured_kafka: KafkaTestCluster, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # every line aiokafka and streamlet log, handshakes included
    settings = client_settings(secured_broker)
    kafka = secured_kafka
    source = await kafka.create_topic("plaintext", partitions=3)
    sink = await kafka.create_topic("wordcount-output", partitions=3)
    app_id = unique_name("secured-wordcount")
    for suffix in ("counts-store-repartition", "counts-store-changelog", "assignments", "metrics"):
        kafka.track(f"{app_id}-{suffix}")
    config = StreamsConfig.from_mapping(
        {
            **settings,
            "application_id": app_id,
            "state_dir": str(tmp_path / "state"),
            "num_stream_threads": 2,
            "processing_guarantee": "exactly_once_v2",
            "metrics_interval_ms": 500,
            "group_instance_id": "secured-worker",  # static membership: JoinGroup with an instance id
        }
    )
    client = KafkaStreams(build_topology(source, sink), config)
    try:
        await client.start()
        await kafka.produce(source, [(None, line.encode()) for line in LINES])
        expected = expected_counts(LINES)
        assert await wait_for_counts(kafka, sink, expected, partitions=3, read_committed=True) == expected
        assert await _query(client, "kafka") == expected["kafka"]
        # the metrics publisher wrote through its own (secured) producer
        assert sum((await kafka.end_offsets(f"{app_id}-metrics", 1)).values()) > 0
    finally:
        await client.close()

    password_file = settings.get("sasl_plain_password_file")
    if password_file:
        password = Path(password_file).read_text().strip()
        assert "sasl" in caplog.text.lower()  # the capture did see the handshakes
        assert password not in caplog.text
        assert password not in repr(config)


async def _query(client: KafkaStreams, word: str, timeout: float = 30.0) -> Any:
    """An interactive query of the counts store, once the store is queryable."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return client.store("counts-store").get(word)
        except QueryUnavailableError:
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)

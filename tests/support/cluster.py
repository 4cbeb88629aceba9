"""A 3-node test cluster (`LocalCluster`, one per test module) and a client of it, for the tests that need
replicated topics, racks or a secured cluster rather than the session's single broker."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

from streamlet.kafka.cluster import LocalCluster
from tests.support.broker import TEST_BROKER_SETTINGS
from tests.support.kafka import KafkaTestCluster
from tests.support.secured import config_of, security_of


@contextlib.contextmanager
def running_cluster(directory: Path, **options: Any) -> Iterator[LocalCluster]:
    """Started with the test brokers' settings, stopped afterwards (and with the test process if it dies);
    `options` are `LocalCluster`'s (`security`, `racks`, ...)."""
    nodes = LocalCluster(directory, die_with_parent=True, overrides=TEST_BROKER_SETTINGS, **options)
    nodes.start()
    try:
        yield nodes
    finally:
        nodes.stop()


@contextlib.asynccontextmanager
async def cluster_client(cluster: LocalCluster) -> AsyncIterator[KafkaTestCluster]:
    """Test access to `cluster`, through its security when it has any."""
    client = KafkaTestCluster(cluster.bootstrap_servers, security_of(config_of(cluster.client_settings())))
    await client.start()
    try:
        yield client
    finally:
        await client.close()

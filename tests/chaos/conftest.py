"""Chaos tests: real `streamlet worker` processes on the real broker, under steady input, while something
breaks. Each compares the final output with an independent count of the input."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.workers import Workers

WordCount = tuple[str, str, Workers]


@pytest.fixture
async def wordcount_app(kafka: KafkaTestCluster, tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[WordCount]]]:
    """A factory: fresh input/output topics and an application id; worker processes with the given configs."""
    made: list[Workers] = []

    async def make(source_config: dict[str, str] | None = None, **config: str) -> WordCount:
        source = await kafka.create_topic("chaos-input", partitions=6, config=source_config)
        sink = await kafka.create_topic("chaos-output", partitions=6)
        app_id = unique_name("chaos-wordcount")
        for suffix in ("counts-store-repartition", "counts-store-changelog"):
            kafka.track(f"{app_id}-{suffix}")
        workers = Workers(kafka.bootstrap_servers, source, sink, app_id, tmp_path / app_id, config)
        workers.root.mkdir(parents=True)
        made.append(workers)
        return source, sink, workers

    yield make
    for workers in made:
        workers.stop_all()

"""Chaos tests: real `streamlet worker` processes on the real broker, under steady input, while something
breaks. Each compares the final output with an independent count of the input."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from tests.support.kafka import KafkaTestCluster
from tests.support.workers import Workers, wordcount_workers

WordCount = tuple[str, str, Workers]


@pytest.fixture
async def wordcount_app(kafka: KafkaTestCluster, tmp_path: Path) -> AsyncIterator[Callable[..., Awaitable[WordCount]]]:
    """A factory: fresh input/output topics and an application id; worker processes with the given configs."""
    made: list[Workers] = []

    async def make(source_config: dict[str, str] | None = None, **config: str) -> WordCount:
        source, sink, workers = await wordcount_workers(
            kafka,
            tmp_path / f"app-{len(made)}",
            name="chaos-wordcount",
            input_topic="chaos-input",
            output_topic="chaos-output",
            source_config=source_config,
            config=config,
        )
        workers.root.mkdir(parents=True)
        made.append(workers)
        return source, sink, workers

    yield make
    for workers in made:
        workers.stop_all()

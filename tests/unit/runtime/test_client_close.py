"""KafkaStreams.close() ends even when one of the client's own parts never finishes closing."""

from __future__ import annotations

import asyncio
import logging

import pytest

from examples.wordcount.dsl import build_topology
from streamlet.config import StreamsConfig
from streamlet.runtime import kafka_streams
from streamlet.runtime.kafka_streams import KafkaStreams, State


class NeverCloses:
    def __init__(self) -> None:
        self.cancelled = False

    async def close(self) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise


class Closes:
    closed = False

    async def close(self) -> None:
        self.closed = True


async def test_a_part_that_never_closes_is_abandoned_and_the_rest_still_closes(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(kafka_streams, "CLOSE_PART_TIMEOUT_S", 0.2)
    streams = KafkaStreams(build_topology(), StreamsConfig(application_id="app"))
    hanging, history = NeverCloses(), Closes()
    streams._metrics_publisher = hanging  # type: ignore[assignment]
    streams.assignment_history = history  # type: ignore[assignment]
    streams.state = State.RUNNING
    with caplog.at_level(logging.WARNING, logger=kafka_streams.log.name):
        await asyncio.wait_for(streams.close(), 10)
    assert hanging.cancelled and history.closed
    assert streams.state is State.NOT_RUNNING
    assert "closing the metrics publisher took longer than 0 s" in caplog.text

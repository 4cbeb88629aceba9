"""Punctuation on the real broker: wall-clock punctuators fire from the stream thread's loop with no input at
all, stream-time ones as records move stream time, and what they forward is written with their task's
transactions (read_committed sees it) and carries the punctuation time."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

import pytest

from streamlet import PunctuationType, StreamsBuilder, StreamsConfig
from streamlet.runtime.kafka_streams import KafkaStreams
from tests.support.kafka import KafkaTestCluster, unique_name

pytestmark = pytest.mark.integration


def _ticker(context: Any) -> Any:
    """Forwards ("wall", n) every 100 ms of wall-clock time and ("stream", records seen) every 1_000 ms of
    stream time, and passes records through."""
    seen = [0, 0]

    def wall(timestamp: int) -> None:
        seen[1] += 1
        context.forward("wall", str(seen[1]))

    def stream(timestamp: int) -> None:
        context.forward("stream", str(seen[0]))

    context.schedule(100, PunctuationType.WALL_CLOCK_TIME, wall)
    context.schedule(1_000, PunctuationType.STREAM_TIME, stream)

    def process(key: Any, value: Any) -> None:
        seen[0] += 1

    return process


async def test_wall_clock_and_stream_time_punctuators_run_in_their_tasks(
    kafka: KafkaTestCluster, tmp_path: Path
) -> None:
    source = await kafka.create_topic("events", partitions=1)
    sink = await kafka.create_topic("ticks", partitions=1)
    builder = StreamsBuilder()
    builder.stream(source, key_serde="str", value_serde="str").process(_ticker).to(sink, "str", "str")
    config = StreamsConfig(
        application_id=unique_name("punctuation"),
        bootstrap_servers=kafka.bootstrap_servers,
        state_dir=str(tmp_path),
        processing_guarantee="exactly_once_v2",
        commit_interval_ms=200,
    )  # type: ignore[arg-type]
    client = KafkaStreams(builder.build(), config)
    started = int(time.time() * 1000)
    await client.start()
    try:
        wall = await kafka.drain(sink, 1, expected=5, read_committed=True, timeout=60)  # no input yet
        assert [r.key for r in wall[:5]] == [b"wall"] * 5
        assert [r.value for r in wall[:5]] == [str(n).encode() for n in range(1, 6)]
        stamps = [r.timestamp for r in wall[:5]]
        assert stamps == sorted(stamps) and all(started < t <= time.time() * 1000 for t in stamps)
        # at most one per 100 ms interval (a late one may be followed closely by the next, never by two more)
        assert all(c - a > 100 for a, c in zip(stamps, stamps[2:], strict=False))

        await kafka.produce(source, [(b"k", b"x")] * 3)  # timestamps: the producer's clock (now)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        stream_ticks: list = []
        while not stream_ticks and loop.time() < deadline:
            records = await kafka.drain(sink, 1, read_committed=True)
            stream_ticks = [r for r in records if r.key == b"stream"]
            await asyncio.sleep(0.2)
        # the first record made stream time known: one stream-time punctuation at the record's timestamp,
        # after the record was processed
        assert stream_ticks and stream_ticks[0].value in (b"1", b"2", b"3")
        assert stream_ticks[0].timestamp >= started
    finally:
        await client.close()

"""A user function that raises below a cached count, on the real broker: it runs when the worker commits and
its record cache flushes. `log_and_continue` skips that record, and the flush and the records after it go on (the
count is in the changelog all the same, as in Kafka Streams); `fail` stops the worker naming the processor."""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path
from typing import Any

import pytest

from streamlet.config import StreamsConfig
from streamlet.errors import ProcessingFailure
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.topology import StreamsBuilder, Topology
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.waiting import poll_until

pytestmark = pytest.mark.integration

CHECK = "check"


def _no_twos(count: int) -> int:
    if count == 2:
        raise ValueError("no twos")
    return count


def _topology(source: str, sink: str) -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream(source, key_serde="str", value_serde="str")
        .group_by_key()
        .count("counts")
        .to_stream()
        .map_values(_no_twos, name=CHECK)
        .to(sink, key_serde="str", value_serde="int64")
    )
    return builder.build()


async def _client(kafka: KafkaTestCluster, tmp_path: Path, **extra: Any) -> tuple[KafkaStreams, str, str, str]:
    source = await kafka.create_topic("words", partitions=1)
    sink = await kafka.create_topic("counts", partitions=1)
    app_id = unique_name("flush-errors")
    changelog = f"{app_id}-counts-changelog"
    kafka.track(changelog)
    config = StreamsConfig(
        application_id=app_id,
        bootstrap_servers=kafka.bootstrap_servers,
        state_dir=str(tmp_path / "state"),
        commit_interval_ms=200,  # the record cache (on by default) flushes at each commit
        **extra,
    )
    return KafkaStreams(_topology(source, sink), config), source, sink, changelog


def _counts(records: list[Any]) -> list[tuple[str, int]]:
    return [(r.key.decode(), struct.unpack(">q", r.value)[0]) for r in records]


async def test_log_and_continue_skips_the_flushed_record_and_goes_on(kafka: KafkaTestCluster, tmp_path: Path) -> None:
    client, source, sink, changelog = await _client(kafka, tmp_path, processing_exception_handler="log_and_continue")
    await client.start()
    try:
        await kafka.produce(source, [(b"a", b"w"), (b"b", b"w"), (b"b", b"w"), (b"c", b"w")])
        out = await poll_until(lambda: kafka.drain(sink, 1), lambda rs: ("c", 1) in _counts(rs))
        assert ("c", 1) in _counts(out)
        await kafka.produce(source, [(b"b", b"w")])  # processing goes on: b's next count passes
        out = await poll_until(lambda: kafka.drain(sink, 1), lambda rs: ("b", 3) in _counts(rs))
        counts = _counts(out)
        assert ("b", 3) in counts and ("a", 1) in counts
        assert all(count != 2 for _, count in counts), counts  # b's 2 was dropped, and only it
        logged = _counts(await kafka.drain(changelog, 1))
        assert ("b", 2) in logged and logged[-1] == ("b", 3)  # written to the store and its changelog all the same
        assert sum(t.resources.handlers.processing.skipped for t in client.threads) == 1
    finally:
        await client.close()


async def test_fail_stops_the_worker_naming_the_processor_below_the_cache(
    kafka: KafkaTestCluster, tmp_path: Path
) -> None:
    client, source, _, _ = await _client(kafka, tmp_path)
    await client.start()
    try:
        await kafka.produce(source, [(b"b", b"w"), (b"b", b"w")])
        with pytest.raises(ProcessingFailure, match=rf"processor {CHECK} raised ValueError\('no twos'\)"):
            await asyncio.wait_for(client.wait(), timeout=60)
    finally:
        await client.close()

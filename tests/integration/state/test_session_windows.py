"""A session-windowed count on the real broker: its output, and its session store restored from the changelog."""

from __future__ import annotations

import asyncio
import struct
import time
from pathlib import Path

import pytest
from aiokafka.structs import TopicPartition

from streamlet.config import StreamsConfig
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.serdes import StringSerde
from streamlet.topology import StreamsBuilder, Topology
from streamlet.topology.session_windows import SessionWindowedSerde, SessionWindows
from tests.support.kafka import KafkaTestCluster, Record, unique_name

pytestmark = pytest.mark.integration

GAP_MS = 5_000
PARTITIONS = 2
Session = tuple[str, int, int]  # user, start, end


def _topology(source: str, sink: str) -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream(source, key_serde="str", value_serde="str")
        .group_by_key()
        .windowed_by(SessionWindows.of_inactivity_gap_and_grace(GAP_MS, 60_000))
        .count("sessions")
        .to_stream()
        .to(sink, key_serde=SessionWindowedSerde(StringSerde()), value_serde="int64")
    )
    return builder.build()


def _config(kafka: KafkaTestCluster, app_id: str, state_dir: Path) -> StreamsConfig:
    return StreamsConfig(
        application_id=app_id,
        bootstrap_servers=kafka.bootstrap_servers,
        state_dir=str(state_dir),
        num_stream_threads=1,
        commit_interval_ms=300,
    )  # type: ignore[arg-type]


async def _produce_clicks(kafka: KafkaTestCluster, topic: str, clicks: list[tuple[str, int]]) -> None:
    await kafka.produce(topic, [Record(user, b"click", timestamp) for user, timestamp in clicks])


def _sessions(records: list) -> dict[Session, int]:
    """The output as a table: the latest count per session, merged-away sessions (tombstones) removed.
    Keys are decoded by hand from Kafka's session windowed format: key bytes, 8-byte end, 8-byte start."""
    table: dict[Session, int] = {}
    for record in records:  # per partition in offset order; one session's updates share a partition
        end, start = struct.unpack(">qq", record.key[-16:])
        session = (record.key[:-16].decode(), start, end)
        if record.value is None:
            table.pop(session, None)
        else:
            table[session] = struct.unpack(">q", record.value)[0]
    return table


async def _wait_for_sessions(kafka: KafkaTestCluster, sink: str, expected: dict[Session, int]) -> dict[Session, int]:
    deadline = asyncio.get_running_loop().time() + 90
    got: dict[Session, int] = {}
    while asyncio.get_running_loop().time() < deadline:
        got = _sessions(await kafka.drain(sink, PARTITIONS))
        if got == expected:
            break
        await asyncio.sleep(0.5)
    return got


class _RestoreCounter:
    def __init__(self) -> None:
        self.restored: dict[TopicPartition, int] = {}

    def on_restore_start(self, tp: TopicPartition, store: str, start: int, end: int) -> None:
        pass

    def on_batch_restored(self, tp: TopicPartition, store: str, batch_end: int, count: int) -> None:
        pass

    def on_restore_end(self, tp: TopicPartition, store: str, total: int) -> None:
        self.restored[tp] = total


async def test_session_count_restored_from_its_changelog_merges_sessions_after_a_restart(
    kafka: KafkaTestCluster, tmp_path: Path
) -> None:
    source = await kafka.create_topic("clicks", partitions=PARTITIONS)
    sink = await kafka.create_topic("sessions", partitions=PARTITIONS)
    app_id = unique_name("sessions")
    kafka.track(f"{app_id}-sessions-changelog")
    topology = _topology(source, sink)
    base = int(time.time() * 1000) // 1000 * 1000 - 600_000  # recent: within the topics' time retention

    # u1: clicks at 0 and 2 s are one session, 9 s starts another (more than the 5 s gap later)
    client = KafkaStreams(topology, _config(kafka, app_id, tmp_path / "first"))
    await client.start()
    try:
        await _produce_clicks(kafka, source, [("u1", base), ("u1", base + 2_000), ("u1", base + 9_000)])
        await _produce_clicks(kafka, source, [("u2", base + 1_000)])
        expected = {
            ("u1", base, base + 2_000): 2,
            ("u1", base + 9_000, base + 9_000): 1,
            ("u2", base + 1_000, base + 1_000): 1,
        }
        assert await _wait_for_sessions(kafka, sink, expected) == expected
    finally:
        await client.close()

    # a new state directory: the sessions can only come back from the changelog. A click at 5.5 s is within
    # the gap of both u1 sessions, so it merges them into one session of 4 clicks (which needs both restored)
    restores = _RestoreCounter()
    client = KafkaStreams(topology, _config(kafka, app_id, tmp_path / "second"), restore_listener=restores)
    await client.start()
    try:
        await _produce_clicks(kafka, source, [("u1", base + 5_500), ("u2", base + 30_000)])
        expected = {
            ("u1", base, base + 9_000): 4,
            ("u2", base + 1_000, base + 1_000): 1,
            ("u2", base + 30_000, base + 30_000): 1,
        }
        assert await _wait_for_sessions(kafka, sink, expected) == expected
        assert sum(restores.restored.values()) >= 3, restores.restored  # the three sessions written before
    finally:
        await client.close()

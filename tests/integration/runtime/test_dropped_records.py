"""Late records on the real broker: a worker's windowed count drops the records whose window had closed, and
says so: its metrics event, its Prometheus text and a WARN naming the processor, the window and stream time.

The expected count comes from the produced input alone: per partition (one task each, keys stay on their
partition), in offset order, a record is late when its window's end is at most the largest timestamp before
it minus the grace period (Kafka's rule for tumbling windows).
"""

from __future__ import annotations

import asyncio
import logging
import random
from pathlib import Path
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from streamlet.config import StreamsConfig
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.runtime.metrics_event import build_metrics_event, metrics_topic, parse_metrics_event
from streamlet.runtime.prometheus import prometheus_text
from streamlet.serdes import StringSerde
from streamlet.topology import StreamsBuilder, Topology
from streamlet.topology.windows import TimeWindowedSerde, TimeWindows
from tests.support.kafka import KafkaTestCluster, Record, unique_name

pytestmark = pytest.mark.integration

SIZE, GRACE = 1_000, 300
PARTITIONS = 2
PROCESSOR = "clicks-per-second"


def _topology(source: str, sink: str) -> Topology:
    builder = StreamsBuilder()
    (
        builder.stream(source, key_serde="str", value_serde="str")
        .group_by_key()
        .windowed_by(TimeWindows.of_size_and_grace(SIZE, GRACE))
        .count("clicks", name=PROCESSOR)
        .to_stream()
        .to(sink, key_serde=TimeWindowedSerde(StringSerde(), SIZE), value_serde="int64")
    )
    return builder.build()


def _input(seed: int, count: int) -> list[tuple[int, str, int]]:
    """(partition, key, timestamp): mostly in time order, one in eight records up to 2.5 s behind."""
    rng = random.Random(seed)
    out = []
    for partition in range(PARTITIONS):
        for i in range(count):
            timestamp = 10_000 + i * 100 + (-rng.randint(0, 2_500) if i % 8 == 7 else rng.randint(0, 50))
            out.append((partition, f"user-{partition}-{i % 3}", timestamp))
    return out


def _late(records: list[tuple[int, str, int]]) -> int:
    late = 0
    for partition in range(PARTITIONS):
        observed = -1
        for p, _, timestamp in records:
            if p != partition:
                continue
            observed = max(observed, timestamp)
            if timestamp - timestamp % SIZE + SIZE <= observed - GRACE:
                late += 1
    return late


async def _produce(kafka: KafkaTestCluster, topic: str, records: list[tuple[int, str, int]]) -> None:
    await kafka.produce(topic, [Record(key, b"click", timestamp, partition) for partition, key, timestamp in records])


class _Warnings(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


async def _latest_event(kafka: KafkaTestCluster, app_id: str, pid: str) -> dict[str, Any]:
    latest: dict[str, Any] = {}
    for record in await kafka.drain(metrics_topic(app_id), 1):
        event = parse_metrics_event(record.value)
        if event is not None and event["process_id"] == pid:
            latest = event
    return latest


async def test_a_worker_counts_and_logs_the_late_records_its_windows_drop(
    kafka: KafkaTestCluster, tmp_path: Path
) -> None:
    records = _input(seed=23, count=200)
    expected = _late(records)
    assert expected > 10  # the input has late records (and the rule above finds them)
    source = await kafka.create_topic("clicks", partitions=PARTITIONS)
    sink = await kafka.create_topic("clicks-per-second", partitions=PARTITIONS)
    app_id = unique_name("dropped")
    for suffix in ("clicks-changelog", "assignments", "metrics"):
        kafka.track(f"{app_id}-{suffix}")
    config = StreamsConfig(
        application_id=app_id,
        bootstrap_servers=kafka.bootstrap_servers,
        state_dir=str(tmp_path / "state"),
        commit_interval_ms=200,
        metrics_interval_ms=300,
    )
    warnings = _Warnings()
    logger = logging.getLogger("streamlet.dropped_records")
    logger.addHandler(warnings)
    client = KafkaStreams(_topology(source, sink), config)
    try:
        await client.start()
        await _produce(kafka, source, records)
        pid = str(client.process_id)
        deadline = asyncio.get_running_loop().time() + 60
        event: dict[str, Any] = {}
        while asyncio.get_running_loop().time() < deadline:  # until every record is processed and reported
            event = await _latest_event(kafka, app_id, pid)
            if event.get("records_processed") == len(records) and event.get("dropped_records_total") == expected:
                break
            await asyncio.sleep(0.3)
        assert event.get("records_processed") == len(records), event
        assert event["dropped_records_total"] == expected, event
        by_processor: dict[tuple[str, str], int] = {}
        for entry in event["tasks"].values():
            for item in entry.get("dropped_records", []):
                key = (item["processor"], item["reason"])
                by_processor[key] = by_processor.get(key, 0) + item["count"]
        assert by_processor == {(PROCESSOR, "late"): expected}, event

        assert client.metrics is not None  # what the worker's GET /metrics serves
        text = prometheus_text(build_metrics_event(await client.metrics.sample())).decode()
        families = {f.name: f for f in text_string_to_metric_families(text)}
        per_task = families["streamlet_task_dropped_records"].samples
        assert sum(s.value for s in per_task if s.name.endswith("_total")) == expected, text
        per_processor = families["streamlet_processor_dropped_records"].samples
        assert {(s.labels["processor"], s.labels["reason"]) for s in per_processor} == {(PROCESSOR, "late")}
        assert sum(s.value for s in per_processor if s.name.endswith("_total")) == expected, text
    finally:
        await client.close()
        logger.removeHandler(warnings)
    late_lines = [m for m in warnings.messages if m.startswith("Skipping record for expired window.")]
    assert late_lines, warnings.messages
    assert all(f"processor=[{PROCESSOR}]" in m and " window=[" in m and " streamTime=[" in m for m in late_lines)
    assert len(late_lines) < expected  # rate-limited: at most one line per processor and task per 10 s

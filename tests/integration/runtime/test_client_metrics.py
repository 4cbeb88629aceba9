"""Client metrics on the real broker: a WordCount client's events, `streamlet status`, and restore progress.

The expected numbers come from the input, not from the code under test: sub-topology 0 reads each input
line once, sub-topology 1 each word once (Java's split), and a restore reads every changelog record (its
key + value bytes summed by the test's own consumer).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import logging
import os
import re
import sys
from typing import Any

import pytest

from examples.wordcount.dsl import build_topology
from streamlet.assignment.history import assignment_history_topic
from streamlet.config import StreamsConfig
from streamlet.runtime import restore_listener
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.runtime.metrics_event import metrics_topic, parse_metrics_event
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.wordcount import expected_counts, java_split_words, wait_for_counts

pytestmark = pytest.mark.integration

LINES = [f"metrics line {i} says word{i} and word{i % 7}" for i in range(300)]


def config(kafka: KafkaTestCluster, app_id: str, state_dir: str, threads: int = 2) -> StreamsConfig:
    return StreamsConfig(
        application_id=app_id,
        bootstrap_servers=kafka.bootstrap_servers,
        state_dir=state_dir,
        num_stream_threads=threads,
        commit_interval_ms=200,
        metrics_interval_ms=500,
    )


def track(kafka: KafkaTestCluster, app_id: str) -> None:
    for suffix in ("counts-store-repartition", "counts-store-changelog", "assignments", "metrics"):
        kafka.track(f"{app_id}-{suffix}")


async def latest_metrics(kafka: KafkaTestCluster, app_id: str) -> dict[str, dict[str, Any]]:
    """Each client's latest metrics event."""
    latest: dict[str, dict[str, Any]] = {}
    for record in await kafka.drain(metrics_topic(app_id), 1):
        event = parse_metrics_event(record.value)
        assert event is not None, record.value
        latest[event["process_id"]] = event
    return latest


def processed_by_subtopology(event: dict[str, Any]) -> dict[str, int]:
    out: dict[str, int] = {}
    for task, entry in event["tasks"].items():
        sub = task.split("_")[0]
        out[sub] = out.get(sub, 0) + entry["records_processed"]
    return out


async def test_a_wordcount_client_publishes_metrics_and_status_prints_it(kafka: KafkaTestCluster, tmp_path) -> None:
    source = await kafka.create_topic("plaintext", partitions=4)
    sink = await kafka.create_topic("wordcount-output", partitions=4)
    app_id = unique_name("metrics-wordcount")
    track(kafka, app_id)
    client = KafkaStreams(build_topology(source, sink), config(kafka, app_id, str(tmp_path / "state")))
    words = sum(len(java_split_words(line)) for line in LINES)
    try:
        await client.start()
        await kafka.produce(source, [(None, line.encode()) for line in LINES])
        expected = expected_counts(LINES)
        assert await wait_for_counts(kafka, sink, expected, partitions=4) == expected
        pid = str(client.process_id)
        deadline = asyncio.get_running_loop().time() + 60
        event: dict[str, Any] = {}
        while asyncio.get_running_loop().time() < deadline:
            event = (await latest_metrics(kafka, app_id)).get(pid, {})
            lags = [p["lag"] for p in event.get("consumer_lag", [])]
            if event and processed_by_subtopology(event) == {"0": len(LINES), "1": words} and lags and max(lags) == 0:
                break
            await asyncio.sleep(0.5)
        assert processed_by_subtopology(event) == {"0": len(LINES), "1": words}, event
        assert event["records_processed"] == len(LINES) + words
        lags = {(p["topic"], p["partition"]): p["lag"] for p in event["consumer_lag"]}
        repartition = f"{app_id}-counts-store-repartition"
        assert set(lags) == {(t, p) for t in (source, repartition) for p in range(4)}, lags
        assert set(lags.values()) == {0}
        assert event["rebalances"] >= 1 and event["commits"] >= 1
        assert {e["state"] for e in event["tasks"].values()} == {"RUNNING"}
        assert event["interval_ms"] == 500 and event["threads"] == 2

        history = [json.loads(r.value) for r in await kafka.drain(assignment_history_topic(app_id), 1)]
        [entry] = history[-1]["clients"]
        assert sorted(event["tasks"]) == entry["active"]
        status = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "streamlet.cli",
            "status",
            "--application-id",
            app_id,
            "--bootstrap-servers",
            kafka.bootstrap_servers,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env={**os.environ, "PYTHONPATH": os.getcwd()},
        )
        out, err = await asyncio.wait_for(status.communicate(), 60)
        assert status.returncode == 0, err.decode()
        text = out.decode()
        # the capacity the latest rebalance saw: 2, or 1 while the second thread's join is still under way
        assert re.search(rf"client {pid} \(host [^,]+, [12] threads\)", text), text
        for task in entry["active"]:
            assert f"    active  {task:<7}RUNNING" in text, text
        assert "consumer lag 0 (" in text and "no probing rebalance pending" in text, text
    finally:
        await client.close()


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.INFO)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


async def test_a_restart_on_an_empty_state_dir_logs_restore_progress(
    kafka: KafkaTestCluster, tmp_path, monkeypatch: pytest.MonkeyPatch
) -> None:
    source = await kafka.create_topic("plaintext", partitions=2)
    sink = await kafka.create_topic("wordcount-output", partitions=2)
    app_id = unique_name("metrics-restore")
    track(kafka, app_id)
    lines = [f"distinct{i} token{i}" for i in range(2500)]  # 5000 words: 5000 changelog records at least
    topology = build_topology(source, sink)
    # one thread: no task moves between threads, so each changelog partition restores exactly once
    first = KafkaStreams(topology, config(kafka, app_id, str(tmp_path / "first"), threads=1))
    try:
        await first.start()
        await kafka.produce(source, [(None, line.encode()) for line in lines])
        expected = expected_counts(lines)
        assert await wait_for_counts(kafka, sink, expected, partitions=2) == expected
    finally:
        await first.close()
    changelog = f"{app_id}-counts-store-changelog"
    ends = await kafka.end_offsets(changelog, 2)
    assert sum(ends.values()) >= 5000
    # what a restore reads, by a consumer of our own: key + value bytes per changelog partition
    changelog_bytes: dict[int, int] = {}
    for record in await kafka.drain(changelog, 2):
        size = len(record.key or b"") + len(record.value or b"")
        changelog_bytes[record.partition] = changelog_bytes.get(record.partition, 0) + size

    monkeypatch.setattr(restore_listener, "PROGRESS_LOG_INTERVAL_S", 0.0)  # a progress line per restored chunk
    handler = _Lines()
    logger = logging.getLogger("streamlet.restore")
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    cfg = config(kafka, app_id, str(tmp_path / "second"), threads=1)  # empty: everything restores from the changelog
    second = KafkaStreams(topology, dataclasses.replace(cfg, restore_chunk_records=500))
    event: dict[str, Any] = {}
    try:
        await second.start()
        deadline = asyncio.get_running_loop().time() + 60
        while asyncio.get_running_loop().time() < deadline:
            if sum(m.startswith(f"restored store counts-store from {changelog}-") for m in handler.messages) == 2:
                break
            await asyncio.sleep(0.2)
        while asyncio.get_running_loop().time() < deadline:  # an event published after both restores ended
            event = (await latest_metrics(kafka, app_id)).get(str(second.process_id), {})
            if sum(r["records"] for r in event.get("restored_total", [])) == sum(ends.values()):
                break
            await asyncio.sleep(0.5)
    finally:
        await second.close()
        logger.removeHandler(handler)
    restored = {}
    for message in handler.messages:
        if message.startswith("restored store counts-store from "):
            partition = int(message.split(":")[0].rsplit("-", 1)[1])
            restored.setdefault(partition, int(message.split(": ")[1].split(" ")[0]))
    assert restored == ends, handler.messages  # every changelog record, per partition
    assert {r["partition"]: r["records"] for r in event["restored_total"]} == ends, event
    assert {r["partition"]: r["bytes"] for r in event["restored_bytes_total"]} == changelog_bytes, event
    assert {(r["store"], r["topic"]) for r in event["restored_bytes_total"]} == {("counts-store", changelog)}
    progress = [
        m for m in handler.messages if m.startswith(f"restoring store counts-store from {changelog}-") and "%" in m
    ]
    assert len(progress) >= 4, handler.messages  # at least 2 chunks per partition before its last
    assert all(", ETA " in m and " records/s" in m for m in progress), progress

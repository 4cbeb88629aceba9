"""The Faust-style version of issue 23's backlog replay: examples/pageviews/windowed_faust.py (a windowed table
of tumbling 1-minute windows, 10 s grace, `on_window_close` writing each minute's final count) started on a
backlog that is already on the broker, checked against the PySpark batch job (`streamlet.spark.windowed_count`).

The page views cover twenty minutes of event time on 6 partitions, spread round-robin (a user's views are on
every partition), each partition in time order, the partitions within a second of each other: disorder within
the grace. A worker that handed each task its fetched partition batch at once would write the repartition topic
in runs of one partition spanning the twenty minutes, and the table would drop most views as late (a write to a
closed window is dropped); one worker takes the partitions in event-time order, so every minute's count is
exact, written once.
"""

from __future__ import annotations

import asyncio
import collections
import json
import random
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest
from aiokafka import AIOKafkaProducer

from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.workers import ROOT, Workers

pytestmark = pytest.mark.e2e

MINUTE = 60_000
PARTITIONS = 6
USERS = [f"user-{i}" for i in range(6)]
INTERNAL = (
    "by-user-repartition",
    "views-per-user-per-minute-changelog",
    "views-per-user-per-minute-closed-windows-changelog",
)


def _backlog(base: int, rng: random.Random) -> list[tuple[int, str, int]]:
    """(partition, user, timestamp): 1,800 views over 20 minutes in time order, round-robin over the partitions;
    then one view per user 30 minutes on (on partition 0), which closes every window of the twenty minutes."""
    views = [(i % PARTITIONS, rng.choice(USERS), base + i * 20 * MINUTE // 1_800) for i in range(1_800)]
    return views + [(0, user, base + 50 * MINUTE) for user in USERS]


async def _produce(kafka: KafkaTestCluster, topic: str, views: list[tuple[int, str, int]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap_servers, linger_ms=5)
    await producer.start()
    try:
        for partition, user, at in views:
            value = json.dumps({"user": user, "page": f"/p{at % 7}"}).encode()
            await producer.send(topic, value, partition=partition, timestamp_ms=at)
        await producer.flush()
    finally:
        await producer.stop()


async def _emitted(
    kafka: KafkaTestCluster, topic: str, at_least: int, timeout: float
) -> dict[tuple[str, int], list[int]]:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        out: dict[tuple[str, int], list[int]] = collections.defaultdict(list)
        for record in await kafka.drain(topic, 2):
            out[(record.key[:-8].decode(), struct.unpack(">q", record.key[-8:])[0])].append(
                struct.unpack(">q", record.value)[0]
            )
        if sum(map(len, out.values())) >= at_least or asyncio.get_running_loop().time() > deadline:
            return dict(out)
        await asyncio.sleep(1)


async def test_a_faust_windowed_table_replays_a_backlog_as_the_batch_job_counts_it(
    kafka: KafkaTestCluster, tmp_path: Path
) -> None:
    source = await kafka.create_topic("page-views", partitions=PARTITIONS)
    sink = await kafka.create_topic("page-views-per-minute", partitions=2)
    app_id = unique_name("pageviews-backlog-faust")
    for suffix in INTERNAL:
        kafka.track(f"{app_id}-{suffix}")
    env = {"PAGEVIEWS_APPLICATION_ID": app_id, "PAGEVIEWS_INPUT_TOPIC": source, "PAGEVIEWS_OUTPUT_TOPIC": sink}
    workers = Workers(
        kafka.bootstrap_servers, source, sink, app_id, tmp_path, {"commit_interval_ms": "200"},
        "examples.pageviews.windowed_faust:app", env,
    )  # fmt: skip
    base = (int(time.time() * 1000) // MINUTE - 60) * MINUTE  # an hour ago: inside the topics' retention
    views = _backlog(base, random.Random(5))
    closed_before = base + 20 * MINUTE
    expected = collections.Counter((user, at // MINUTE * MINUTE) for _, user, at in views if at < closed_before)
    await _produce(kafka, source, views)  # the backlog is there before the worker starts
    try:
        workers.start(0, threads=1)
        emitted = await _emitted(kafka, sink, at_least=len(expected), timeout=120)
        assert workers.stop(0) == 0, workers.log(0)[-3000:]
    finally:
        workers.stop_all()

    assert emitted == {window: [n] for window, n in expected.items()}  # no view dropped as late, each window once
    verify = subprocess.run(
        [
            sys.executable,
            *("-m", "streamlet.spark.windowed_count", "--bootstrap-servers", kafka.bootstrap_servers),
            *("--input-topic", source, "--output-topic", sink, "--size-ms", str(MINUTE), "--field", "user"),
            *("--closed-before", str(closed_before)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert verify.returncode == 0, verify.stdout[-3000:] + verify.stderr[-3000:]
    assert f"{len(expected)} closed windows, {len(views)} input records, 0 mismatches" in verify.stdout

"""examples/pageviews/windowed.py as two worker processes on the real broker, exactly-once, with a kill -9
in the middle: every minute's count per page is written once and is exact, as a PySpark batch job over the
input topic computes it (`streamlet.spark.windowed_count`).

Page views cover twelve minutes of event time, in time order up to a few seconds (within the 10 s grace).
Worker 0 is killed with SIGKILL after the first part; worker 1 takes its tasks over, restoring the window
store and the suppression buffer from their changelogs. A last view of every page, twenty minutes on,
moves each task's stream time past all twelve minutes, so every one of their windows closes.
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
PAGES = [f"/p{i}" for i in range(6)]
EOS = {
    "processing_guarantee": "exactly_once_v2",
    "commit_interval_ms": "200",
    "session_timeout_ms": "6000",
    "transaction_timeout_ms": "5000",
}


def _views(base: int, minutes: range, per_minute: int, rng: random.Random) -> list[tuple[str, int]]:
    """(page, timestamp): `per_minute` views a minute, in time order but for up to 5 s of jitter."""
    views = []
    for minute in minutes:
        for i in range(per_minute):
            at = base + minute * MINUTE + i * MINUTE // per_minute
            views.append((rng.choice(PAGES), max(base, at - rng.randrange(5_000))))
    return views


async def _produce(kafka: KafkaTestCluster, topic: str, views: list[tuple[str, int]]) -> None:
    producer = AIOKafkaProducer(bootstrap_servers=kafka.bootstrap_servers, linger_ms=5)
    await producer.start()
    try:
        for page, at in views:
            value = json.dumps({"user": "u", "page": page}).encode()
            await producer.send(topic, value, key=page.encode(), timestamp_ms=at)
        await producer.flush()
    finally:
        await producer.stop()


async def _emitted(
    kafka: KafkaTestCluster, topic: str, at_least: int, timeout: float
) -> dict[tuple[str, int], list[int]]:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        out: dict[tuple[str, int], list[int]] = collections.defaultdict(list)
        for record in await kafka.drain(topic, 2, read_committed=True):
            out[(record.key[:-8].decode(), struct.unpack(">q", record.key[-8:])[0])].append(
                struct.unpack(">q", record.value)[0]
            )
        if sum(map(len, out.values())) >= at_least or asyncio.get_running_loop().time() > deadline:
            return dict(out)
        await asyncio.sleep(1)


async def test_each_minute_is_counted_exactly_once_across_a_kill_9(kafka: KafkaTestCluster, tmp_path: Path) -> None:
    source = await kafka.create_topic("page-views", partitions=4)
    sink = await kafka.create_topic("page-views-per-minute", partitions=2)
    app_id = unique_name("pageviews-per-minute")
    for suffix in ("by-page-repartition", "views-per-page-per-minute-changelog", "final-counts-store-changelog"):
        kafka.track(f"{app_id}-{suffix}")
    env = {"PAGEVIEWS_APPLICATION_ID": app_id, "PAGEVIEWS_INPUT_TOPIC": source, "PAGEVIEWS_OUTPUT_TOPIC": sink}
    workers = Workers(
        kafka.bootstrap_servers, source, sink, app_id, tmp_path, EOS, "examples.pageviews.windowed:app", env
    )
    rng = random.Random(11)
    base = (int(time.time() * 1000) // MINUTE - 60) * MINUTE  # an hour ago: inside the topics' retention
    parts = [
        _views(base, range(0, 4), 150, rng),
        _views(base, range(4, 8), 150, rng),
        _views(base, range(8, 12), 150, rng),
    ]
    last = [(page, base + 20 * MINUTE) for page in PAGES]  # closes every window of minutes 0..11
    expected = collections.Counter((page, at // MINUTE * MINUTE) for part in parts for page, at in part)
    try:
        workers.start(0, threads=1)
        workers.start(1, threads=1)
        await _produce(kafka, source, parts[0])
        # minute 3's views reach 3:59.x: minutes 0..2 close (end + 10 s <= stream time) wherever views landed
        early = await _emitted(kafka, sink, at_least=3 * len(PAGES), timeout=120)
        assert len(early) >= 3 * len(PAGES), (workers.log(0)[-2000:], workers.log(1)[-2000:])
        workers.kill9(0)  # mid-run: its open transaction aborts, its tasks move to worker 1

        for part in parts[1:]:
            await _produce(kafka, source, part)
        await _produce(kafka, source, last)
        emitted = await _emitted(kafka, sink, at_least=len(expected), timeout=180)
        assert workers.stop(1) == 0, workers.log(1)[-3000:]
    finally:
        workers.stop_all()

    assert emitted == {window: [n] for window, n in expected.items()}  # each window once, its exact count
    verify = subprocess.run(
        [
            sys.executable,
            *("-m", "streamlet.spark.windowed_count", "--bootstrap-servers", kafka.bootstrap_servers),
            *("--input-topic", source, "--output-topic", sink, "--size-ms", str(MINUTE), "--field", "page"),
            *("--closed-before", str(base + 20 * MINUTE)),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert verify.returncode == 0, verify.stdout[-3000:] + verify.stderr[-3000:]
    assert f"{len(expected)} closed windows, {sum(expected.values()) + len(PAGES)} input records, 0 mismatches" in (
        verify.stdout
    )

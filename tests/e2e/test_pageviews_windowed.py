"""examples/pageviews/windowed.py (the DSL) and windowed_faust.py (a Faust-style table with on_window_close),
each as two worker processes on the real broker, exactly-once, with a kill -9 in the middle: every minute's
count per user is written once and is exact, as a PySpark batch job over the input topic computes it
(`streamlet.spark.windowed_count`).

Page views cover twelve minutes of event time, in time order up to a few seconds (within the 10 s grace).
Worker 0 is killed with SIGKILL after the first part; worker 1 takes its tasks over, restoring the window
store and the suppression buffer (or the table's closed-up-to stream time) from their changelogs. A last view
of every user, twenty minutes on, moves each task's stream time past all twelve minutes, so every one of
their windows closes.
"""

from __future__ import annotations

import collections
import json
import random
import time
from pathlib import Path

import pytest

from tests.support.kafka import KafkaTestCluster, Record, unique_name
from tests.support.windowed_output import emitted_windows, spark_verdict
from tests.support.workers import Workers

pytestmark = pytest.mark.e2e

MINUTE = 60_000
USERS = [f"user-{i}" for i in range(6)]
#: the example app, and its internal topics (deleted after the test)
APPS = {
    "dsl": (
        "examples.pageviews.windowed:app",
        ("by-user-repartition", "views-per-user-per-minute-changelog", "final-counts-store-changelog"),
    ),
    "faust": (
        "examples.pageviews.windowed_faust:app",
        (
            "by-user-repartition",
            "views-per-user-per-minute-changelog",
            "views-per-user-per-minute-closed-windows-changelog",
        ),
    ),
}
EOS = {
    "processing_guarantee": "exactly_once_v2",
    "commit_interval_ms": "200",
    "session_timeout_ms": "6000",
    "transaction_timeout_ms": "5000",
}


def _views(base: int, minutes: range, per_minute: int, rng: random.Random) -> list[tuple[str, int]]:
    """(user, timestamp): `per_minute` views a minute, in time order but for up to 5 s of jitter."""
    views = []
    for minute in minutes:
        for i in range(per_minute):
            at = base + minute * MINUTE + i * MINUTE // per_minute
            views.append((rng.choice(USERS), max(base, at - rng.randrange(5_000))))
    return views


async def _produce(kafka: KafkaTestCluster, topic: str, views: list[tuple[str, int]]) -> None:
    # keyed by user: re-keyed by user, a user's views stay in one partition, in order (within grace)
    views_json = [Record(user, json.dumps({"user": user, "page": f"/p{at % 7}"}), at) for user, at in views]
    await kafka.produce(topic, views_json)


@pytest.mark.parametrize("style", sorted(APPS))
async def test_each_minute_is_counted_exactly_once_across_a_kill_9(
    kafka: KafkaTestCluster, tmp_path: Path, style: str
) -> None:
    target, internal_topics = APPS[style]
    source = await kafka.create_topic("page-views", partitions=4)
    sink = await kafka.create_topic("page-views-per-minute", partitions=2)
    app_id = unique_name(f"pageviews-per-minute-{style}")
    for suffix in internal_topics:
        kafka.track(f"{app_id}-{suffix}")
    env = {"PAGEVIEWS_APPLICATION_ID": app_id, "PAGEVIEWS_INPUT_TOPIC": source, "PAGEVIEWS_OUTPUT_TOPIC": sink}
    workers = Workers(kafka.bootstrap_servers, source, sink, app_id, tmp_path, EOS, target, env)
    rng = random.Random(11)
    base = (int(time.time() * 1000) // MINUTE - 60) * MINUTE  # an hour ago: inside the topics' retention
    parts = [
        _views(base, range(0, 4), 150, rng),
        _views(base, range(4, 8), 150, rng),
        _views(base, range(8, 12), 150, rng),
    ]
    last = [(user, base + 20 * MINUTE) for user in USERS]  # closes every window of minutes 0..11
    expected = collections.Counter((user, at // MINUTE * MINUTE) for part in parts for user, at in part)
    try:
        workers.start(0, threads=1)
        workers.start(1, threads=1)
        await _produce(kafka, source, parts[0])
        # minute 3's views reach 3:59.x: minutes 0..2 close (end + 10 s <= stream time) wherever views landed
        early = await emitted_windows(kafka, sink, 2, at_least=3 * len(USERS), timeout=120, read_committed=True)
        assert len(early) >= 3 * len(USERS), (workers.log(0)[-2000:], workers.log(1)[-2000:])
        workers.kill9(0)  # mid-run: its open transaction aborts, its tasks move to worker 1

        for part in parts[1:]:
            await _produce(kafka, source, part)
        await _produce(kafka, source, last)
        emitted = await emitted_windows(kafka, sink, 2, at_least=len(expected), timeout=180, read_committed=True)
        assert workers.stop(1) == 0, workers.log(1)[-3000:]
    finally:
        workers.stop_all()

    assert emitted == {window: [n] for window, n in expected.items()}  # each window once, its exact count
    verdict = spark_verdict(kafka, source, sink, size_ms=MINUTE, field="user", closed_before=base + 20 * MINUTE)
    records = sum(expected.values()) + len(USERS)
    assert f"{len(expected)} closed windows, {records} input records, 0 mismatches" in verdict

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
    views_json = [Record(None, json.dumps({"user": user, "page": f"/p{at % 7}"}), at, p) for p, user, at in views]
    await kafka.produce(topic, views_json)


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
        emitted = await emitted_windows(kafka, sink, 2, at_least=len(expected), timeout=120)
        assert workers.stop(0) == 0, workers.log(0)[-3000:]
    finally:
        workers.stop_all()

    assert emitted == {window: [n] for window, n in expected.items()}  # no view dropped as late, each window once
    verdict = spark_verdict(kafka, source, sink, size_ms=MINUTE, field="user", closed_before=closed_before)
    assert f"{len(expected)} closed windows, {len(views)} input records, 0 mismatches" in verdict

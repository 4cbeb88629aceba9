"""A Faust-style tumbling table on the real broker: an agent counts clicks per user per minute, the counts
come back on the output topic, and a worker started on an empty state directory restores the windows from
the changelog and goes on counting in them.

The expected counts are a Counter over what the test produced, by (user, minute of the record's timestamp).
"""

from __future__ import annotations

import asyncio
import collections
import json
import random
import struct
import time

import aiohttp
import pytest

from streamlet import App
from streamlet.faust.windowed_tables import WindowWrapper
from tests.support.kafka import KafkaTestCluster, Record, unique_name
from tests.support.waiting import free_port

pytestmark = pytest.mark.integration

PARTITIONS = 2
MINUTE_MS = 60_000


def _app(app_id: str, source: str, sink: str) -> tuple[App, WindowWrapper]:
    app = App(app_id, commit_interval_ms=200)
    clicks = app.Table("clicks-per-minute", key_type=str, value_type=int, default=int).tumbling(60, expires=3600)
    per_minute = app.topic(sink, key_type=str, value_serde="int64")

    @app.agent(app.topic(source, key_type=str, value_serde="json"), tables=[clicks])
    async def count(stream):
        async for user, _click in stream.items():
            clicks[user] += 1
            await per_minute.send(key=user, value=clicks[user].current())  # carries the click's timestamp

    return app, clicks


def _clicks(n: int, base_ms: int, seed: int) -> list[tuple[str, int]]:
    """(user, timestamp) over five minutes, out of order within them."""
    rng = random.Random(seed)
    return [(f"user-{rng.randrange(7)}", base_ms + rng.randrange(5 * MINUTE_MS)) for _ in range(n)]


async def _produce(kafka: KafkaTestCluster, topic: str, clicks: list[tuple[str, int]]) -> None:
    value = json.dumps({"page": "/"})
    await kafka.produce(topic, [Record(user, value, timestamp) for user, timestamp in clicks])


async def _latest_counts(kafka: KafkaTestCluster, topic: str, expected: int) -> dict[tuple[str, int], int]:
    latest: dict[tuple[str, int], int] = {}
    for record in await kafka.drain(topic, PARTITIONS, expected=expected, timeout=60):
        latest[(record.key.decode(), record.timestamp // MINUTE_MS)] = struct.unpack(">q", record.value)[0]
    return latest


async def test_counts_per_user_per_minute_survive_a_restart_on_empty_state(kafka: KafkaTestCluster, tmp_path) -> None:
    source = await kafka.create_topic("clicks", partitions=PARTITIONS)
    sink = await kafka.create_topic("clicks-per-minute", partitions=PARTITIONS)
    app_id = unique_name("windowed-table")
    kafka.track(f"{app_id}-clicks-per-minute-changelog")
    base = (int(time.time() * 1000) // MINUTE_MS - 10) * MINUTE_MS  # recent: the topics' retention keeps them
    first, second = _clicks(300, base, seed=1), _clicks(200, base, seed=2)
    expected = collections.Counter((user, ts // MINUTE_MS) for user, ts in first)

    worker = _app(app_id, source, sink)[0].streams(
        bootstrap_servers=kafka.bootstrap_servers, state_dir=str(tmp_path / "a")
    )
    await worker.start()
    try:
        await _produce(kafka, source, first)
        assert await _latest_counts(kafka, sink, len(first)) == dict(expected)
    finally:
        await worker.close()

    # a new state directory: every window must come back from the changelog before counting goes on
    worker = _app(app_id, source, sink)[0].streams(
        bootstrap_servers=kafka.bootstrap_servers, state_dir=str(tmp_path / "b")
    )
    await worker.start()
    try:
        await _produce(kafka, source, second)
        expected.update((user, ts // MINUTE_MS) for user, ts in second)
        assert await _latest_counts(kafka, sink, len(first) + len(second)) == dict(expected)
    finally:
        await worker.close()


async def test_a_page_reads_a_users_window_on_its_partition_and_the_workers_items(
    kafka: KafkaTestCluster, tmp_path
) -> None:
    source = await kafka.create_topic("clicks", partitions=PARTITIONS)
    sink = await kafka.create_topic("clicks-per-minute", partitions=PARTITIONS)
    app_id = unique_name("windowed-page")
    kafka.track(f"{app_id}-clicks-per-minute-changelog")
    base = (int(time.time() * 1000) // MINUTE_MS - 10) * MINUTE_MS
    clicks = [(user, ts) for user, ts in _clicks(200, base, seed=3) if ts < base + MINUTE_MS]  # one minute
    expected = collections.Counter(user for user, _ in clicks)
    assert len(expected) > 3  # users on both partitions

    app, table = _app(app_id, source, sink)
    minute = table.relative_to(base / 1000)  # the minute of the clicks, whatever the clock says now

    @app.page("/clicks/{user}")
    async def user_clicks(web, request, user):
        return {"count": minute[user].value(), "items": sorted(minute.items())}

    port = free_port()
    worker = asyncio.create_task(
        app.run_worker(bootstrap_servers=kafka.bootstrap_servers, state_dir=str(tmp_path), web_port=port)
    )
    try:
        await _produce(kafka, source, clicks)
        await _latest_counts(kafka, sink, len(clicks))
        async with aiohttp.ClientSession() as session:
            for user in sorted(expected):
                async with session.get(f"http://127.0.0.1:{port}/clicks/{user}") as answer:
                    assert answer.status == 200, await answer.text()
                    body = await answer.json()
                assert body["count"] == expected[user]  # read on the user's own partition
                assert body["items"] == [[u, n] for u, n in sorted(expected.items())]  # both partitions
    finally:
        app.stop_worker()
        await worker

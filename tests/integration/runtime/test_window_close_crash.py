"""Faust's `on_window_close` on the real broker, exactly-once, across a crash: each window's final count is sent
once, because which windows have closed is changelogged in the same transaction as the sends.

Windows of 1 s kept 1.5 s (grace 0.5 s); times below are after a recent whole minute, not 1970, which the
topics' time retention would delete at the broker's next retention check (the sink's records, and the window
changelog's: the restore then found nothing, and window 3 s never closed). Phase one ends at stream time 3.6 s:
windows 0, 1 and 2 s have closed, and window 2 s is still in the window store (reads expire it only once a
window starting at 3.5 s or later is written). The client is then killed (its threads cancelled: nothing
flushed or checkpointed) and a new one with an empty state directory restores both stores from their
changelogs. Phase two moves stream time to 7.2 s: window 3 s closes, and window 2 s, still in the restored
store, must not close again. Expected counts are counted from the produced input.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from streamlet import App
from tests.support.clients import crash, wait_for_committed
from tests.support.kafka import KafkaTestCluster, Record, unique_name

pytestmark = pytest.mark.integration

KEYS = [f"user-{i}" for i in range(4)]
PARTITIONS = 2
BASE = (int(time.time() * 1000) // 60_000 - 10) * 60_000  # ten minutes ago, on a whole minute


def _app(app_id: str, source: str, sink: str) -> App:
    app = App(app_id)
    closed = app.topic(sink, key_type=str, value_serde="json")

    async def write_final(key: Any, count: int) -> None:
        user, (start, _end) = key
        await closed.send(key=user, value=[round(start * 1000), count])

    clicks = app.Table("clicks", key_type=str, value_type=int, default=int, on_window_close=write_final).tumbling(
        1, expires=1.5
    )

    @app.agent(app.topic(source, key_type=str, value_serde="str"), tables=[clicks])
    async def count(stream):
        async for user, _ in stream.items():
            clicks[user] += 1

    return app


def _clicks(windows: range) -> list[tuple[str, int]]:
    """(key, timestamp): key i clicks i+1 times in each window, in time order per key."""
    return [
        (key, BASE + window * 1000 + 50 * n + i)
        for window in windows
        for i, key in enumerate(KEYS)
        for n in range(i + 1)
    ]


async def _produce(kafka: KafkaTestCluster, topic: str, clicks: list[tuple[str, int]]) -> None:
    # each key on one partition, so each task's stream time moves
    records = [Record(key, b"click", timestamp, KEYS.index(key) % PARTITIONS) for key, timestamp in clicks]
    await kafka.produce(topic, records)


async def _closed(kafka: KafkaTestCluster, sink: str, expected: int) -> list[tuple[str, int, int]]:
    import json

    await kafka.drain(sink, PARTITIONS, expected=expected, read_committed=True, timeout=60)
    await asyncio.sleep(2)  # anything more (a duplicate) would have been committed by now
    records = await kafka.drain(sink, PARTITIONS, read_committed=True, timeout=60)
    return [(record.key.decode(), *json.loads(record.value)) for record in records]


async def test_each_window_is_closed_once_across_a_crash(kafka: KafkaTestCluster, tmp_path: Path) -> None:
    source = await kafka.create_topic("clicks", partitions=PARTITIONS)
    sink = await kafka.create_topic("closed-clicks", partitions=PARTITIONS)
    app_id = unique_name("window-close")
    for suffix in ("clicks-changelog", "clicks-closed-windows-changelog"):
        kafka.track(f"{app_id}-{suffix}")
    app = _app(app_id, source, sink)
    config = {"bootstrap_servers": kafka.bootstrap_servers, "processing_guarantee": "exactly_once_v2"}

    first = _clicks(range(3)) + [(key, BASE + 3_600 + i) for i, key in enumerate(KEYS)]
    counts = Counter((key, ts // 1000 * 1000) for key, ts in first)
    client = app.streams(state_dir=str(tmp_path / "a"), commit_interval_ms=200, **config)
    await client.start()
    try:
        await _produce(kafka, source, first)
        early = {(key, start): n for (key, start), n in counts.items() if start <= BASE + 2_000}
        got = await _closed(kafka, sink, len(early))
        assert sorted(got) == sorted((key, start, n) for (key, start), n in early.items())
        # every click committed: the counts and the closed-up-to stream time are in committed transactions
        await wait_for_committed(kafka, app_id, source, len(first))
    finally:
        await crash(client)

    app = _app(app_id, source, sink)  # as a new process would: nothing kept in memory either
    client = app.streams(state_dir=str(tmp_path / "b"), commit_interval_ms=200, **config)  # nothing local
    await client.start()
    try:
        await _produce(kafka, source, [(key, BASE + 7_200 + i) for i, key in enumerate(KEYS)])
        got = await _closed(kafka, sink, len(counts))
    finally:
        await client.close()
    # every closed window once: 2 s (still in the restored store) not again, 3 s closed after the crash
    assert sorted(got) == sorted((key, start, n) for (key, start), n in counts.items())

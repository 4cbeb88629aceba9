"""A leader timer runs in task 0_0 on the real broker: under exactly-once, its table write and its send of
each tick commit together with the task, so a kill -9 between (or during) ticks neither loses nor repeats a
committed tick.

Each tick of `tests.support.timer_app` adds one to a table entry and sends the new value. Worker 0 ticks,
is killed with SIGKILL (its open transaction aborts), and worker 1, with an empty state directory, restores
the table from its changelog and ticks on. The committed output must be exactly 1, 2, ..., N: a tick whose
send committed without its table write would repeat a value, one whose write committed without its send
would skip one. The changelog's last committed value is N.
"""

from __future__ import annotations

import asyncio
import struct
from pathlib import Path

import pytest

from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.workers import Workers

pytestmark = pytest.mark.e2e

EOS = {
    "processing_guarantee": "exactly_once_v2",
    "commit_interval_ms": "200",
    "session_timeout_ms": "6000",
    "transaction_timeout_ms": "5000",
}


async def _committed_values(kafka: KafkaTestCluster, topic: str, at_least: int, timeout: float = 90) -> list[int]:
    deadline = asyncio.get_running_loop().time() + timeout
    while True:
        records = await kafka.drain(topic, 1, read_committed=True)
        values = [struct.unpack(">q", r.value)[0] for r in records]
        if len(values) >= at_least or asyncio.get_running_loop().time() > deadline:
            return values
        await asyncio.sleep(0.5)


async def test_a_leader_timer_commits_its_table_write_and_send_with_the_task(
    kafka: KafkaTestCluster, tmp_path: Path
) -> None:
    source = await kafka.create_topic("timer-input")
    sink = await kafka.create_topic("timer-ticks")
    app_id = unique_name("timer-in-task")
    changelog = f"{app_id}-ticks-changelog"
    kafka.track(changelog)
    workers = Workers(kafka.bootstrap_servers, source, sink, app_id, tmp_path, EOS, "tests.support.timer_app:app")
    try:
        workers.start(0, threads=1)
        before = await _committed_values(kafka, sink, at_least=15)
        assert len(before) >= 15, workers.log(0)[-3000:]
        workers.kill9(0)  # mid-run: whatever its open transaction held is aborted

        workers.start(1, threads=1)
        values = await _committed_values(kafka, sink, at_least=len(before) + 15)
        assert len(values) >= len(before) + 15, workers.log(1)[-3000:]
        assert workers.stop(1) == 0
    finally:
        workers.stop_all()

    values = [struct.unpack(">q", r.value)[0] for r in await kafka.drain(sink, 1, read_committed=True)]
    assert values == list(range(1, len(values) + 1)), values  # no tick lost, none repeated
    logged = [r for r in await kafka.drain(changelog, 1, read_committed=True) if r.key == b"n"]
    assert logged and struct.unpack(">q", logged[-1].value)[0] == values[-1]

"""Helpers for tests that drive a `KafkaStreams` client on the real broker."""

from __future__ import annotations

import asyncio
import contextlib

from streamlet.runtime.kafka_streams import KafkaStreams
from tests.support.kafka import KafkaTestCluster


async def crash(client: KafkaStreams) -> None:
    """Kill the client's threads mid-run: no commit, no flush, no checkpoint (its transaction aborts)."""
    tasks = [thread.done for thread in client.threads if thread.done is not None]
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
    await client.close()


async def wait_for_committed(
    kafka: KafkaTestCluster, group: str, topic: str, records: int, timeout: float = 60
) -> None:
    """Until `group` has committed `records` offsets of `topic` in all (under exactly-once: everything the input
    changed is in committed transactions by then)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        offsets = await kafka.admin.list_consumer_group_offsets(group)
        if sum(meta.offset for tp, meta in offsets.items() if tp.topic == topic) >= records:
            return
        assert loop.time() < deadline, f"{group} never committed {records} records of {topic}"
        await asyncio.sleep(0.2)

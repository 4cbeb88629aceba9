"""Helpers for tests that drive a `KafkaStreams` client on the real broker."""

from __future__ import annotations

import asyncio
import contextlib

from streamlet.runtime.kafka_streams import KafkaStreams


async def crash(client: KafkaStreams) -> None:
    """Kill the client's threads mid-run: no commit, no flush, no checkpoint (its transaction aborts)."""
    tasks = [thread.done for thread in client.threads if thread.done is not None]
    for task in tasks:
        task.cancel()
    for task in tasks:
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
    await client.close()

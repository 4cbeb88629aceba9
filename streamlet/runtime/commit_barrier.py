"""A client's threads leave the group only once every one of them has committed (`KafkaStreams.close`).

Why: threads close concurrently, and the first to leave starts a rebalance. A thread that commits after that
finds its member rejoining, and a rejoining member does not commit (Kafka's `generationIfStable`): its last
offsets would be lost, and a clean close would end in duplicates under at-least-once. So each thread commits and
closes its tasks, then waits here until all have, and only then leaves.
"""

from __future__ import annotations

import asyncio
import contextlib


class CommitBarrier:
    """`parties` threads each call `arrive()` once, after their final commit; it returns when all have, or after
    `timeout_s` (a thread stuck elsewhere must not hold the others' shutdown forever)."""

    def __init__(self, parties: int, timeout_s: float) -> None:
        self._waiting = parties
        self._timeout_s = timeout_s
        self._all_committed = asyncio.Event()
        if parties <= 0:
            self._all_committed.set()

    async def arrive(self) -> None:
        self._waiting -= 1
        if self._waiting <= 0:
            self._all_committed.set()
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._timeout_s):
                await self._all_committed.wait()

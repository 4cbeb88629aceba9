"""Changelog log-end offsets: the ones the group leader compares task offset sums against, and the ones a
restoration runs to.

One per client, shared by its threads, over the client's admin consumer (read_uncommitted: the high
watermark, as Kafka Streams lists them). aiokafka calls the leader's `assign()` synchronously, so it
cannot fetch anything: every thread refreshes the end offsets when a rebalance starts (in its revocation
callback), and the leader reads the cached values. Restoration asks for fresh ones.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

from aiokafka.structs import TopicPartition

from streamlet.assignment.client_state import end_offset_sum
from streamlet.errors import StreamletError
from streamlet.runtime.clients import RestoreConsumer
from streamlet.runtime.topology_metadata import TopologyMetadata
from streamlet.task_id import TaskId


class ChangelogEndOffsets:
    def __init__(self, metadata: TopologyMetadata) -> None:
        self._metadata = metadata
        self._consumer: RestoreConsumer | None = None
        self._partitions: list[TopicPartition] = []
        self._end_offsets: dict[TopicPartition, int] = {}
        self._lock = asyncio.Lock()

    def start(self, consumer: RestoreConsumer, partitions: list[TopicPartition]) -> None:
        """Begin answering for `partitions` (every changelog partition of the application)."""
        self._consumer = consumer
        self._partitions = list(partitions)

    async def refresh(self) -> None:
        if not self._partitions or self._consumer is None:
            return
        async with self._lock:
            self._end_offsets = dict(await self._consumer.end_offsets(self._partitions))

    async def log_end_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """Fresh log-end offsets of `partitions` (a restoration's end)."""
        if self._consumer is None:
            raise StreamletError("changelog end offsets asked for before the client started")
        return dict(await self._consumer.end_offsets(partitions))

    def sums(self, stateful_tasks: list[TaskId]) -> dict[TaskId, int]:
        """Per task, the sum of its changelogs' end offsets (0 for a partition not fetched yet)."""
        ends = self._end_offsets
        return {
            task: end_offset_sum(ends.get(tp, 0) for tp in self._metadata.changelog_partitions(task).values())
            for task in stateful_tasks
        }

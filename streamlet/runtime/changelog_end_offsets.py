"""Changelog log-end offsets: the ones the group leader compares task offset sums against, and the ones a
restoration runs to.

One per client, shared by its threads, over the client's admin consumer (read_uncommitted: the high
watermark, as Kafka Streams lists them). aiokafka calls the leader's `assign()` synchronously, so it
cannot fetch anything: every thread refreshes the end offsets when a rebalance starts (in its revocation
callback), and the leader reads the cached values. Restoration asks for fresh ones.

A source topic reused as a changelog (`reuse.ktable.source.topics`) ends, for lags, at the group's committed
offset, not at its log end (Kafka's `sourceChangelogEndOffsets`): a task is restored only up to there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

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

    async def refresh(
        self, committed_offsets: Callable[[Sequence[TopicPartition]], Awaitable[dict[TopicPartition, int]]]
    ) -> None:
        """Fetch the end offsets again: log ends, and `committed_offsets` for source topics used as changelogs."""
        if not self._partitions or self._consumer is None:
            return
        sourced = [tp for tp in self._partitions if self._metadata.is_source_changelog(tp)]
        others = [tp for tp in self._partitions if not self._metadata.is_source_changelog(tp)]
        async with self._lock:
            ends = dict(await self._consumer.end_offsets(others)) if others else {}
            if sourced:
                ends.update(await committed_offsets(sourced))
            self._end_offsets = ends

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

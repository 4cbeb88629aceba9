"""ChangelogReader: the one restore path (Kafka Streams' StoreChangelogReader).

One per stream thread. It owns the thread's restore consumer and follows the changelog partitions of
the thread's restoring active tasks (up to the end offset read when restoration started) and of its
standbys (forever). Each call to `restore()` reads one bounded chunk, so the event loop and heartbeats
keep running, and reports which active tasks have caught up.

The end offset is the log end (high watermark), not the last stable offset, as in Kafka Streams. Under
exactly-once the restore consumer reads read_committed, so while a transaction ahead of that end is open
the position cannot reach it, and the restoration waits for the transaction to commit or abort. Stopping
at the last stable offset instead would drop committed records written behind a crashed producer's open
transaction, whose input offsets are already committed: lost updates.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from aiokafka.structs import TopicPartition

from streamlet.kafka.record_blocks import RecordBlock
from streamlet.runtime.clients import RestoreConsumer
from streamlet.runtime.restore_listener import StateRestoreListener
from streamlet.runtime.standby_task import StandbyTask
from streamlet.runtime.stream_task import StreamTask

log = logging.getLogger("streamlet.thread")

Owner = StreamTask | StandbyTask
_key, _value = attrgetter("key"), attrgetter("value")


@dataclass
class ChangelogPartition:
    """What the reader knows of one changelog partition it follows."""

    partition: TopicPartition
    store: str
    owner: Owner
    end_offset: int | None = None  # active restoration completes here; None for a standby
    restored: int = 0


@dataclass
class RestoreResult:
    applied: int = 0  # records written to stores in this step
    completed: list[StreamTask] = field(default_factory=list)  # active tasks that caught up in this step


def record_bytes(records: Sequence[Any]) -> int:
    """Key + value bytes of `records` (a RecordBlock's columns, or record objects): Kafka's bytes-consumed
    measure without headers and batch framing. Null keys and values (tombstones) count 0."""
    keys: Iterable[bytes | None]
    values: Iterable[bytes | None]
    if isinstance(records, RecordBlock):
        keys, values = records.keys, records.values
    else:
        keys, values = map(_key, records), map(_value, records)
    return sum(map(len, filter(None, keys))) + sum(map(len, filter(None, values)))


class ChangelogReader:
    def __init__(
        self,
        consumer: RestoreConsumer,
        listener: StateRestoreListener,
        chunk_records: int,
        *,
        log_end_offsets: Callable[[Sequence[TopicPartition]], Awaitable[dict[TopicPartition, int]]],
    ) -> None:
        self.consumer = consumer
        self._log_end_offsets = log_end_offsets
        self._listener = listener
        self._chunk_records = chunk_records
        self._changelogs: dict[TopicPartition, ChangelogPartition] = {}
        self._bytes_restored = getattr(listener, "on_bytes_restored", None)

    async def restore(
        self, restoring: Iterable[StreamTask], standbys: Iterable[StandbyTask], timeout_ms: int
    ) -> RestoreResult:
        """Read one chunk for `restoring` actives and `standbys`; return what was applied and who finished.

        The sets may change between calls (tasks assigned, revoked, finished): partitions of a new owner are
        (re)seeded from its store's offsets, and partitions nobody wants any more are dropped.
        """
        restoring = list(restoring)
        owners: list[Owner] = [*restoring, *standbys]
        wanted: dict[TopicPartition, tuple[str, Owner]] = {}
        for owner in owners:
            assert owner.state_manager is not None
            for store, tp in owner.state_manager.changelog_partitions().items():
                wanted[tp] = (store, owner)
        current = self._changelogs
        if wanted.keys() != current.keys() or any(current[tp].owner is not owner for tp, (_, owner) in wanted.items()):
            await self._follow(wanted)
        result = RestoreResult()
        if not wanted:
            return result
        data = await self.consumer.getmany(timeout_ms=timeout_ms, max_records=self._chunk_records)
        step = self._chunk_records
        for tp, records in data.items():
            changelog = self._changelogs.get(tp)
            if changelog is None or not records:
                continue
            state_manager = changelog.owner.state_manager
            assert state_manager is not None
            # the restore consumer returns whole record batches (up to a fetch's size): apply and report them
            # a chunk at a time, each one write batch, with the event loop running in between
            for start in range(0, len(records), step):
                chunk = records[start : start + step]
                state_manager.restore_records(tp, chunk)
                result.applied += len(chunk)
                if changelog.end_offset is not None:
                    changelog.restored += len(chunk)
                    if self._bytes_restored is not None:
                        self._bytes_restored(tp, changelog.store, record_bytes(chunk))
                    self._listener.on_batch_restored(tp, changelog.store, chunk[-1].offset, len(chunk))
                await asyncio.sleep(0)  # a restore chunk holds the GIL inside RocksDB; let heartbeats run
        for task in restoring:
            if await self._caught_up(task):
                self._complete(task)
                result.completed.append(task)
        return result

    async def _follow(self, wanted: dict[TopicPartition, tuple[str, Owner]]) -> None:
        """Assign exactly `wanted`; a partition whose owner changed is re-seeded from its store.

        aiokafka's `assign()` forgets every position, so the partitions that stay keep theirs by a seek (else
        they would restart from the earliest offset: every other restore and standby re-read its whole
        changelog each time one task finished restoring).
        """
        previous = self._changelogs
        changed = [tp for tp, (_, owner) in wanted.items() if tp not in previous or previous[tp].owner is not owner]
        suspended = getattr(self._listener, "on_restore_suspended", None)
        for tp, changelog in previous.items():
            if changelog.end_offset is not None and (tp not in wanted or tp in changed) and suspended is not None:
                suspended(tp, changelog.store, changelog.restored)  # the task left mid-restore
        kept = {tp: await self.consumer.position(tp) for tp in wanted if tp in previous and tp not in changed}
        self.consumer.assign(list(wanted))
        for tp, position in kept.items():  # a new assignment forgets every position, the kept ones' too
            self.consumer.seek(tp, position)
        self._changelogs = {tp: previous[tp] for tp in wanted if tp not in changed}
        restoring_new = [tp for tp in changed if isinstance(wanted[tp][1], StreamTask)]
        ends = await self._log_end_offsets(restoring_new) if restoring_new else {}
        for tp in changed:
            store, owner = wanted[tp]
            state_manager = owner.state_manager
            assert state_manager is not None
            start = state_manager.changelog_offsets()[tp]
            end = ends.get(tp)
            if end is not None and start > end:
                log.warning(
                    "task %s: checkpointed offset %d of %s-%d is beyond the changelog end %d (topic "
                    "recreated or truncated); wiping the store and restoring from the beginning",
                    owner.task_id,
                    start - 1,
                    tp.topic,
                    tp.partition,
                    end,
                )
                state_manager.wipe()
                start = 0
            self.consumer.seek(tp, start)
            self._changelogs[tp] = ChangelogPartition(tp, store, owner, end)
            if end is not None:
                self._listener.on_restore_start(tp, store, start, end)

    async def _caught_up(self, task: StreamTask) -> bool:
        assert task.state_manager is not None
        for tp in task.state_manager.changelog_partitions().values():
            changelog = self._changelogs.get(tp)
            if changelog is None or changelog.owner is not task or changelog.end_offset is None:
                return False
            if await self.consumer.position(tp) < changelog.end_offset:
                return False
        return True

    def _complete(self, task: StreamTask) -> None:
        assert task.state_manager is not None
        for tp in task.state_manager.changelog_partitions().values():
            changelog = self._changelogs[tp]
            changelog.end_offset = None  # the task is RUNNING from here on; the reader lets go on its next step
            self._listener.on_restore_end(tp, changelog.store, changelog.restored)

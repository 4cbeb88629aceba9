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

A source topic reused as a store's changelog (`reuse.ktable.source.topics`) is read only up to the group's
committed offset of that partition (none committed: 0), as Kafka's StoreChangelogReader limits it: the records
after it are the task's input, which must meet the store as it was when they were first processed. An active
restoration ends there; a standby stops there and asks for the committed offset again, at most every
`limit_refresh_ms`, once it has caught up with it.
"""

from __future__ import annotations

import asyncio
import bisect
import logging
import time
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
    limit: int | None = None  # a source changelog: records from here on are not applied (yet)
    blocked: bool = False  # a source changelog read up to its limit: not fetched until the limit moves


@dataclass
class RestoreResult:
    applied: int = 0  # records written to stores in this step
    completed: list[StreamTask] = field(default_factory=list)  # active tasks that caught up in this step


def _below(records: Sequence[Any], limit: int) -> int:
    """How many of `records` (in offset order) lie before offset `limit`."""
    offsets = records.offsets if isinstance(records, RecordBlock) else [r.offset for r in records]
    return bisect.bisect_left(offsets, limit)


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
        committed_offsets: Callable[[Sequence[TopicPartition]], Awaitable[dict[TopicPartition, int]]] | None = None,
        limit_refresh_ms: int = 0,
    ) -> None:
        self.consumer = consumer
        self._log_end_offsets = log_end_offsets
        self._committed_offsets = committed_offsets
        self._limit_refresh_s = limit_refresh_ms / 1000
        self._limits_refreshed = 0.0
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
        await self._maybe_refresh_standby_limits()
        fetchable = [tp for tp, changelog in self._changelogs.items() if not changelog.blocked]
        if fetchable:
            every = len(fetchable) == len(self._changelogs)
            data = await self.consumer.getmany(
                *(() if every else fetchable), timeout_ms=timeout_ms, max_records=self._chunk_records
            )
        else:  # every partition waits for its limit to move
            data = {}
            await asyncio.sleep(timeout_ms / 1000)
        step = self._chunk_records
        for tp, records in data.items():
            changelog = self._changelogs.get(tp)
            if changelog is None or not records:
                continue
            if changelog.limit is not None and records[-1].offset >= changelog.limit:
                records = records[: _below(records, changelog.limit)]
                self.consumer.seek(tp, changelog.limit)  # the rest is fetched again once the limit moves
                changelog.blocked = True
                if not records:
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
        limits = await self._limits([tp for tp in changed if self._is_source(tp, wanted[tp][1])])
        for tp in changed:
            store, owner = wanted[tp]
            state_manager = owner.state_manager
            assert state_manager is not None
            start = state_manager.changelog_offsets()[tp]
            end = ends.get(tp)
            limit = limits.get(tp)
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
            if end is not None and limit is not None:
                end = min(end, limit)
            self._changelogs[tp] = ChangelogPartition(
                tp, store, owner, end, limit=limit, blocked=limit is not None and start >= limit
            )
            if end is not None:
                self._listener.on_restore_start(tp, store, start, end)

    @staticmethod
    def _is_source(tp: TopicPartition, owner: Owner) -> bool:
        assert owner.state_manager is not None
        return owner.state_manager.changelog_as_source(tp)

    async def _limits(self, partitions: list[TopicPartition]) -> dict[TopicPartition, int]:
        """The group's committed offsets of source changelogs (0 where none is committed), as Kafka's
        `committedOffsetForChangelogs`."""
        if not partitions:
            return {}
        if self._committed_offsets is None:
            raise RuntimeError("a source topic is a changelog, but the reader cannot fetch committed offsets")
        committed = await self._committed_offsets(partitions)
        self._limits_refreshed = time.monotonic()
        return {tp: committed.get(tp, 0) for tp in partitions}

    async def _maybe_refresh_standby_limits(self) -> None:
        """Standbys caught up with their source changelogs' limits ask for the committed offsets again
        (Kafka's `maybeUpdateLimitOffsetsForStandbyChangelogs`); limits only grow."""
        waiting = [c for c in self._changelogs.values() if c.blocked and c.end_offset is None]
        if not waiting or time.monotonic() - self._limits_refreshed < self._limit_refresh_s:
            return
        limits = await self._limits([c.partition for c in waiting])
        for changelog in waiting:
            limit = max(limits[changelog.partition], changelog.limit or 0)
            if limit != changelog.limit:
                changelog.limit, changelog.blocked = limit, False

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

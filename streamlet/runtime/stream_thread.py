"""StreamThread: one consumer in the group plus the tasks it owns, driven by one asyncio task.

The loop is Kafka Streams' at-least-once loop: restore what must be restored (in bounded chunks, so the
event loop and heartbeats keep running), poll, process each task's records in offset order, hand output
to the producer, and every `commit_interval_ms` flush caches and the producer, then commit consumed
offsets, then write checkpoints. A checkpoint therefore never claims more than Kafka has acknowledged.

Rebalances follow aiokafka's eager protocol: on revocation the thread commits and suspends its tasks (they
stay open, so a task assigned back continues at once); on assignment it closes what it lost and opens
what it gained. Task offset sums report `-2` for tasks it ran until the revocation, as Kafka Streams'
cooperative threads do for tasks that keep running through a rebalance.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Iterable
from typing import TYPE_CHECKING

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, ConsumerRebalanceListener
from aiokafka.errors import CommitFailedError, IllegalStateError
from aiokafka.structs import TopicPartition

from streamlet.assignment.partition_assignor import StreamsPartitionAssignor
from streamlet.assignment.protocol import NO_FOLLOWUP, AssignmentInfo, AssignorErrorCode, SubscriptionInfo
from streamlet.errors import StateStoreError, StreamletError
from streamlet.runtime.record_collector import RecordCollector
from streamlet.runtime.stream_task import DeserializationHandler, StandbyTask, StreamTask, TaskState
from streamlet.state.offset_sums import task_offset_sums
from streamlet.state.record_cache import RecordCache
from streamlet.state.state_manager import ProcessorStateManager
from streamlet.task_id import TaskId

if TYPE_CHECKING:
    from streamlet.runtime.kafka_streams import KafkaStreams

log = logging.getLogger("streamlet.thread")

# Kafka Streams writes a checkpoint on commit only once this many changelog records accumulated.
CHECKPOINT_OFFSET_DELTA = 10_000


class TaskMigratedError(StreamletError):
    """The thread lost its group membership while committing; its tasks will be reassigned."""


class _Listener(ConsumerRebalanceListener):
    def __init__(self, thread: StreamThread) -> None:
        self._thread = thread

    async def on_partitions_revoked(self, revoked: Iterable[TopicPartition]) -> None:
        await self._thread._on_partitions_revoked()

    async def on_partitions_assigned(self, assigned: Iterable[TopicPartition]) -> None:
        await self._thread._on_partitions_assigned()


class StreamThread:
    """One stream thread of a client (an asyncio task, not an OS thread)."""

    def __init__(self, streams: KafkaStreams, index: int) -> None:
        self.streams = streams
        config = streams.config
        self.process_id = streams.process_id
        self.name = f"{config.application_id}-{self.process_id}-StreamThread-{index}"
        self.config = config
        self.active: dict[TaskId, StreamTask] = {}
        self.standby: dict[TaskId, StandbyTask] = {}
        self._was_running: set[TaskId] = set()
        self._pending_info: AssignmentInfo | None = None
        self._waiting_for_lock: dict[TaskId, bool] = {}  # task -> is_active, retried until the dir lock frees
        self._restore_ends: dict[TopicPartition, int] = {}
        self._restore_owners: dict[TopicPartition, StreamTask | StandbyTask] = {}
        self._restored_counts: dict[TopicPartition, int] = {}
        self._probing_deadline_ms: int | None = None
        self._unique_field = 0
        self._last_commit = time.monotonic()
        self._failure: BaseException | None = None
        self._stopping = False
        self._task: asyncio.Task[None] | None = None
        self._partition_index: dict[TopicPartition, StreamTask] = {}
        # Serialises the loop's task work with the rebalance callbacks (which run in aiokafka's coordinator
        # task). Never held across the main consumer's getmany(): aiokafka's docs warn that deadlocks.
        self._lock = asyncio.Lock()
        self._closing = False

        bootstrap = config.bootstrap_servers
        self.assignor = StreamsPartitionAssignor(
            self, streams.topology_metadata, streams.task_assignor, streams.assignment_configs
        )
        self.consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=config.application_id,
            client_id=f"{self.name}-consumer",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            partition_assignment_strategy=(self.assignor,),
            max_poll_records=config.max_poll_records,
            session_timeout_ms=config.session_timeout_ms,
            heartbeat_interval_ms=config.heartbeat_interval_ms,
            rebalance_timeout_ms=config.rebalance_timeout_ms,
            max_poll_interval_ms=config.max_poll_interval_ms,
            metadata_max_age_ms=30_000,
        )
        self.restore_consumer = AIOKafkaConsumer(
            bootstrap_servers=bootstrap,
            group_id=None,
            client_id=f"{self.name}-restore-consumer",
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            # aiokafka's default 1 MiB: with 4 MiB, aiokafka 0.14 was seen returning no records for a large
            # freshly written changelog while moving the position to the end (bench/README.md)
        )
        self.producer = AIOKafkaProducer(
            bootstrap_servers=bootstrap,
            client_id=f"{self.name}-producer",
            acks="all",
            linger_ms=5,
            max_batch_size=256 * 1024,
        )
        self.cache = RecordCache(max(0, config.statestore_cache_max_bytes // config.num_stream_threads))
        self.collector = RecordCollector(self.producer, streams.topology_metadata.changelog_topics())
        self.deserialization = DeserializationHandler(
            config.deserialization_exception_handler, self.collector, config.dead_letter_topic
        )

    # ---- lifecycle ----------------------------------------------------------------------------------------

    async def start(self) -> None:
        await self.producer.start()
        await self.restore_consumer.start()
        await self.consumer.start()
        self.consumer.subscribe(self.streams.topology_metadata.source_topics(), listener=_Listener(self))
        self._task = asyncio.create_task(self._run(), name=self.name)

    async def stop(self) -> None:
        """Commit, close tasks cleanly (flush + checkpoint), leave the group."""
        self._stopping = True
        if self._task is not None:
            await asyncio.gather(self._task, return_exceptions=True)

    @property
    def done(self) -> asyncio.Task[None] | None:
        return self._task

    async def _run(self) -> None:
        clean = False
        try:
            while not self._stopping:
                await self._run_once()
            clean = True
        except asyncio.CancelledError:
            raise
        except BaseException as exc:
            log.exception("stream-thread [%s] failed", self.name)
            self._failure = exc
            raise
        finally:
            await self._shutdown(clean)

    async def _shutdown(self, clean: bool) -> None:
        async with self._lock:
            self._closing = True  # rebalance callbacks from here on leave the tasks alone
            if clean:
                try:
                    await self._commit(force_checkpoint=True)
                except Exception:  # the close below still runs; tasks restore from the last checkpoint
                    log.exception("stream-thread [%s] final commit failed", self.name)
                    clean = False
            for task in list(self.active.values()):
                self._close_active(task, clean=clean)
            for task in list(self.standby.values()):
                self._close_standby(task, clean=clean)
        for closer in (self.consumer.stop, self.restore_consumer.stop, self.producer.stop):
            try:
                await closer()
            except Exception:
                log.exception("stream-thread [%s] closing a client failed", self.name)
        self.streams.release_unowned_task_dirs(self.name, keep=set())
        log.info("stream-thread [%s] stopped (clean=%s)", self.name, clean)

    # ---- the loop -----------------------------------------------------------------------------------------

    async def _run_once(self) -> None:
        if self._failure is not None:
            raise self._failure
        async with self._lock:
            if self._waiting_for_lock:
                self._retry_locked_tasks()
            restoring = any(t.state is TaskState.RESTORING for t in self.active.values())
            restored = 0
            if restoring or self.standby:
                restored = await self._restore_step(timeout_ms=0 if self._has_running() else 20)
        # while restoring, poll briefly so restoration keeps going; never spin without waiting
        poll_ms = 100 if not restoring else (0 if restored else 20)
        batch = await self.consumer.getmany(timeout_ms=poll_ms, max_records=self.config.max_poll_records)
        async with self._lock:
            if batch:
                by_partition = self._partition_index
                assigned = self.consumer.assignment()
                for tp, records in batch.items():
                    task = by_partition.get(tp)
                    if task is None or task.state is not TaskState.RUNNING:
                        # the consumer's position already moved past these records: rewind, or they are lost
                        if tp in assigned:
                            self.consumer.seek(tp, records[0].offset)
                        continue
                    task.process(tp, records)
                await self.collector.drain()
            if (time.monotonic() - self._last_commit) * 1000 >= self.config.commit_interval_ms:
                await self._commit_or_migrate()
        await asyncio.sleep(0)  # every iteration yields, even when all awaits above completed at once
        if self._probing_deadline_ms is not None and time.time() * 1000 >= self._probing_deadline_ms:
            log.info(
                "stream-thread [%s] Triggering the followup rebalance scheduled for %d ms.",
                self.name,
                self._probing_deadline_ms,
            )
            self._probing_deadline_ms = None
            self.consumer._coordinator.request_rejoin()  # type: ignore[union-attr]

    def _has_running(self) -> bool:
        return any(t.state is TaskState.RUNNING for t in self.active.values())

    def _reindex(self) -> None:
        self._partition_index = {tp: task for task in self.active.values() for tp in task.partitions}

    # ---- commit -------------------------------------------------------------------------------------------

    async def _commit_or_migrate(self, *, force_checkpoint: bool = False) -> bool:
        """Commit; if the group took this member's partitions meanwhile, close the tasks dirty instead.

        Kafka Streams' TaskMigratedException handling: the tasks are already someone else's, so nothing is
        committed or checkpointed; their state restores from the last checkpoint when they come back. The
        consumer rejoins the group on its next poll.
        """
        try:
            await self._commit(force_checkpoint=force_checkpoint)
            return True
        except TaskMigratedError as exc:
            log.warning("%s; closing %d active tasks without committing and rejoining the group", exc, len(self.active))
            for task in list(self.active.values()):
                self._close_active(task, clean=False)
            self._was_running = set()
            return False

    async def _commit(self, *, force_checkpoint: bool = False) -> None:
        self._last_commit = time.monotonic()
        running = [t for t in self.active.values() if t.state in (TaskState.RUNNING, TaskState.SUSPENDED)]
        for task in running:
            task.flush_caches()
        acked = await self.collector.flush()
        for task in running:
            if task.state_manager is not None:
                task.state_manager.update_changelog_offsets(acked)
        offsets = {}
        for task in running:
            offsets.update(task.committable_offsets())
        if offsets:
            try:
                await self.consumer.commit(offsets)
            except (CommitFailedError, IllegalStateError) as exc:
                raise TaskMigratedError(f"stream-thread [{self.name}] lost its partitions: {exc}") from exc
            for task in running:
                task.mark_committed(offsets)
        for task in running:
            await self._maybe_checkpoint(task.state_manager, force_checkpoint)
        for standby in self.standby.values():
            await self._maybe_checkpoint(standby.state_manager, force_checkpoint)

    @staticmethod
    async def _maybe_checkpoint(state_manager: ProcessorStateManager | None, force: bool) -> None:
        if state_manager is None:
            return
        if force or _offsets_since_checkpoint(state_manager) >= CHECKPOINT_OFFSET_DELTA:
            # RocksDB's flush releases the GIL; run it off the loop so heartbeats continue.
            await asyncio.to_thread(state_manager.checkpoint)

    # ---- rebalance callbacks --------------------------------------------------------------------------------

    async def _on_partitions_revoked(self) -> None:
        async with self._lock:
            if self._closing:
                return
            try:
                if self.active and await self._commit_or_migrate(force_checkpoint=True):
                    self._was_running = {t.task_id for t in self.active.values() if t.state is TaskState.RUNNING}
                    for task in self.active.values():
                        if task.state is TaskState.RUNNING:
                            task.state = TaskState.SUSPENDED
                await self.streams.refresh_changelog_end_offsets()
            except Exception as exc:  # aiokafka swallows listener errors: surface it from the loop instead
                log.exception("stream-thread [%s] failed while preparing the rebalance", self.name)
                self._failure = exc

    def subscription_info(self) -> SubscriptionInfo:
        """Called by the assignor on every join (synchronously)."""
        running: list[TaskId] = []
        owned: dict[TaskId, dict[TopicPartition, int]] = {}
        for task_id, task in self.active.items():
            if task.state_manager is None:
                continue
            if task_id in self._was_running or task.state is TaskState.RUNNING:
                running.append(task_id)
            else:
                owned[task_id] = task.state_manager.changelog_offsets()
        for task_id, standby in self.standby.items():
            owned[task_id] = standby.state_manager.changelog_offsets()
        sums = task_offset_sums(
            self.streams.state_directory, self.name, running_active_tasks=running, owned_changelog_offsets=owned
        )
        self._unique_field += 1
        return SubscriptionInfo(
            process_id=self.process_id,
            task_offset_sums=sums,
            prev_active=frozenset(self.active),
            prev_standby=frozenset(self.standby),
            host_info=self.config.application_server,
            unique_field=self._unique_field,
        )

    def changelog_end_offset_sums(self, stateful_tasks: list[TaskId]) -> dict[TaskId, int]:
        return self.streams.changelog_end_offset_sums(stateful_tasks)

    def on_assignment_info(self, info: AssignmentInfo, partitions: list[TopicPartition]) -> None:
        self._pending_info = info

    async def _on_partitions_assigned(self) -> None:
        async with self._lock:
            info, self._pending_info = self._pending_info, None
            if info is None or self._closing:
                return
            try:
                self._apply_assignment(info)
            except Exception as exc:
                log.exception("stream-thread [%s] failed to apply its assignment", self.name)
                self._failure = exc

    def _apply_assignment(self, info: AssignmentInfo) -> None:
        if info.error_code != AssignorErrorCode.NONE:
            raise StreamletError(
                f"stream-thread [{self.name}] the group leader reported assignment error {info.error_code} "
                "(1 = a source topic is missing or has no metadata); see the leader's log"
            )
        new_active, new_standby = set(info.active_tasks), set(info.standby_tasks)
        for task_id, task in list(self.active.items()):
            if task_id not in new_active:
                self._close_active(task, clean=True)
        for task_id, standby in list(self.standby.items()):
            if task_id not in new_standby:
                self._close_standby(standby, clean=True)
        self._waiting_for_lock = {t: a for t, a in self._waiting_for_lock.items() if t in new_active | new_standby}
        for task_id in sorted(new_active):
            task = self.active.get(task_id)
            if task is None:
                self._waiting_for_lock[task_id] = True
            elif task.state is TaskState.SUSPENDED:
                task.state = TaskState.RUNNING
        for task_id in sorted(new_standby - set(self.standby)):
            self._waiting_for_lock[task_id] = False
        self._was_running = set()
        self.streams.release_unowned_task_dirs(self.name, new_active | new_standby)
        self._retry_locked_tasks()
        self._probing_deadline_ms = None if info.next_rebalance_ms == NO_FOLLOWUP else info.next_rebalance_ms
        self._reindex()
        self._pause_restoring()
        followup = "" if self._probing_deadline_ms is None else f", followup rebalance at {self._probing_deadline_ms}"
        active_names, standby_names = sorted(map(str, new_active)), sorted(map(str, new_standby))
        log.info("stream-thread [%s] assigned active %s standby %s%s", self.name, active_names, standby_names, followup)

    def _retry_locked_tasks(self) -> None:
        """Open tasks whose directory another thread of this client still held (it releases it on close)."""
        opened = False
        for task_id, is_active in list(self._waiting_for_lock.items()):
            try:
                if is_active:
                    task = self.streams.create_active_task(task_id, self)
                    if task is None:
                        continue
                    self.active[task_id] = task
                else:
                    standby = self.streams.create_standby_task(task_id, self)
                    if standby is None:
                        continue
                    self.standby[task_id] = standby
            except StateStoreError as exc:
                # e.g. RocksDB still locked by a closing instance; a corrupt store was wiped: retry next loop
                log.warning("stream-thread [%s] cannot open task %s yet (%s); retrying", self.name, task_id, exc)
                continue
            del self._waiting_for_lock[task_id]
            opened = True
        if opened:
            self._reindex()
            self._pause_restoring()

    def _pause_restoring(self) -> None:
        assigned = self.consumer.assignment()
        paused = [tp for t in self.active.values() if t.state is TaskState.RESTORING for tp in t.partitions]
        if paused:
            self.consumer.pause(*[tp for tp in paused if tp in assigned])

    def _close_active(self, task: StreamTask, *, clean: bool) -> None:
        try:
            task.close(clean=clean)
        finally:
            self.active.pop(task.task_id, None)
            self.streams.state_directory.unlock_task(task.task_id, self.name)
            self._reindex()

    def _close_standby(self, standby: StandbyTask, *, clean: bool) -> None:
        try:
            standby.close(clean=clean)
        finally:
            self.standby.pop(standby.task_id, None)
            self.streams.state_directory.unlock_task(standby.task_id, self.name)

    # ---- restoration and standbys ------------------------------------------------------------------------------

    async def _restore_step(self, timeout_ms: int) -> int:
        """One bounded round of changelog reading for restoring actives and standbys; returns records applied."""
        wanted: dict[TopicPartition, StreamTask | StandbyTask] = {}
        for task in self.active.values():
            if task.state is TaskState.RESTORING and task.state_manager is not None:
                for tp in task.state_manager.changelog_partitions().values():
                    wanted[tp] = task
        for standby in self.standby.values():
            for tp in standby.state_manager.changelog_partitions().values():
                wanted[tp] = standby
        if wanted.keys() != self._restore_owners.keys() or any(
            self._restore_owners[tp] is not owner for tp, owner in wanted.items()
        ):
            await self._reassign_restore_consumer(wanted)
        if not wanted:
            return 0
        data = await self.restore_consumer.getmany(timeout_ms=timeout_ms, max_records=self.config.restore_chunk_records)
        listener = self.streams.restore_listener
        applied = 0
        for tp, records in data.items():
            owner = wanted.get(tp)
            if owner is None or not records:
                continue
            assert owner.state_manager is not None
            owner.state_manager.restore_records(tp, records)
            applied += len(records)
            if isinstance(owner, StreamTask):
                self._restored_counts[tp] = self._restored_counts.get(tp, 0) + len(records)
                listener.on_batch_restored(
                    tp, _store_of(tp, self.config.application_id), records[-1].offset, len(records)
                )
            await asyncio.sleep(0)  # a restore chunk holds the GIL inside RocksDB; let heartbeats run
        for task in [t for t in self.active.values() if t.state is TaskState.RESTORING]:
            if await self._restored(task):
                self._finish_restoration(task)
        return applied

    async def _reassign_restore_consumer(self, wanted: dict[TopicPartition, StreamTask | StandbyTask]) -> None:
        """Follow the changelogs in `wanted`; a partition whose owner changed is re-seeded from its store."""
        changed = [tp for tp, owner in wanted.items() if self._restore_owners.get(tp) is not owner]
        self.restore_consumer.assign(list(wanted))
        self._restore_owners = dict(wanted)
        for tp in list(self._restore_ends):
            if tp not in wanted or tp in changed:
                self._restore_ends.pop(tp)
        restoring_new = [tp for tp in changed if isinstance(wanted[tp], StreamTask)]
        ends = await self.restore_consumer.end_offsets(restoring_new) if restoring_new else {}
        for tp in changed:
            owner = wanted[tp]
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
            self.restore_consumer.seek(tp, start)
            if end is not None:
                self._restore_ends[tp] = end
                self._restored_counts[tp] = 0
                self.streams.restore_listener.on_restore_start(
                    tp, _store_of(tp, self.config.application_id), start, end
                )

    async def _restored(self, task: StreamTask) -> bool:
        assert task.state_manager is not None
        for tp in task.state_manager.changelog_partitions().values():
            end = self._restore_ends.get(tp)
            if end is None or self._restore_owners.get(tp) is not task:
                return False
            if await self.restore_consumer.position(tp) < end:
                return False
        return True

    def _finish_restoration(self, task: StreamTask) -> None:
        assert task.state_manager is not None
        for tp in task.state_manager.changelog_partitions().values():
            self._restore_ends.pop(tp, None)
            total = self._restored_counts.pop(tp, 0)
            self.streams.restore_listener.on_restore_end(tp, _store_of(tp, self.config.application_id), total)
        task.state = TaskState.RUNNING
        assigned = self.consumer.assignment()
        self.consumer.resume(*[tp for tp in task.partitions if tp in assigned])
        log.info("stream-thread [%s] task %s restored, now RUNNING", self.name, task.task_id)


def _offsets_since_checkpoint(state_manager: ProcessorStateManager) -> int:
    checkpointed = state_manager.checkpointed_offsets()
    total = 0
    for tp, offset in state_manager.current_offsets().items():
        if offset is not None:
            total += offset - max(checkpointed.get(tp, -1), -1)
    return total


def _store_of(tp: TopicPartition, application_id: str) -> str:
    name = tp.topic
    prefix, suffix = f"{application_id}-", "-changelog"
    if name.startswith(prefix) and name.endswith(suffix):
        return name[len(prefix) : -len(suffix)]
    return name

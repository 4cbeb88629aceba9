"""StreamThread: the loop of one consumer in the group, driven by one asyncio task.

The loop is Kafka Streams' at-least-once loop: restore what must be restored (in bounded chunks, so the
event loop and heartbeats keep running), poll, process each task's records in offset order, hand output
to the producer, and every `commit_interval_ms` commit. The thread owns its clients and the loop; its
`TaskManager` owns the tasks and every transition, and its `ChangelogReader` owns restoration.

Rebalances follow the group's protocol (`streamlet.kafka.group`): cooperative by default, so the loop keeps
processing the tasks it keeps while the group rebalances, and only tasks that move stop. The rebalance
callbacks run in the membership's task, so one lock serialises them with the loop's task work; it is never
held across the main consumer's `getmany()`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any

from aiokafka import AIOKafkaProducer
from aiokafka.errors import KafkaError
from aiokafka.structs import TopicPartition

from streamlet.assignment.api import AssignmentConfigs, TaskAssignor
from streamlet.assignment.partition_assignor import StreamsPartitionAssignor
from streamlet.assignment.protocol import NO_FOLLOWUP, AssignmentInfo, SubscriptionInfo
from streamlet.config import StreamsConfig
from streamlet.kafka import connect
from streamlet.kafka.replica_racks import describe_replica_racks
from streamlet.runtime.assignment_history import AssignmentHistoryWriter
from streamlet.runtime.changelog_end_offsets import ChangelogEndOffsets
from streamlet.runtime.changelog_reader import ChangelogReader
from streamlet.runtime.clients import KafkaClientSupplier
from streamlet.runtime.commit_barrier import CommitBarrier
from streamlet.runtime.handlers import ThreadHandlers
from streamlet.runtime.punctuation import punctuation_record, system_time_ms
from streamlet.runtime.queries import StreamsMetadataState
from streamlet.runtime.record_collector import RecordCollector
from streamlet.runtime.restore_listener import StateRestoreListener
from streamlet.runtime.stall_watch import StallWatch
from streamlet.runtime.stream_task import StreamTask
from streamlet.runtime.stream_time_watermark import StreamTimeWatermark
from streamlet.runtime.task_creator import TaskCreator, ThreadResources
from streamlet.runtime.task_manager import TaskManager
from streamlet.runtime.topology_metadata import TopologyMetadata
from streamlet.state.record_cache import RecordCache
from streamlet.state.state_directory import StateDirectory
from streamlet.task_id import TaskId

log = logging.getLogger("streamlet.thread")


class _Listener:
    """The group's rebalance callbacks, handed to the thread."""

    def __init__(self, thread: StreamThread) -> None:
        self._thread = thread

    async def on_partitions_revoked(self, partitions: set[TopicPartition]) -> None:
        await self._thread.on_partitions_revoked(partitions)

    async def on_partitions_assigned(self, partitions: set[TopicPartition]) -> None:
        await self._thread.on_partitions_assigned(partitions)

    async def on_partitions_lost(self, partitions: set[TopicPartition]) -> None:
        await self._thread.on_partitions_lost(partitions)


class _HistoryRecorder:
    """The assignor's view of the client's history writer, plus this thread's group generation."""

    def __init__(self, thread: StreamThread, writer: AssignmentHistoryWriter) -> None:
        self._thread = thread
        self._writer = writer
        self.application_id = writer.application_id
        self.assignor_name = writer.assignor_name

    def previous_event(self) -> Mapping[str, Any] | None:
        return self._writer.previous_event()

    def generation(self) -> int | None:
        # the join response's generation is set before the leader's assignment runs
        generation = self._thread.consumer.group_metadata().generation_id
        return generation if generation >= 0 else None

    def record(self, event: dict[str, Any]) -> None:
        self._writer.record(event)


class StreamThread:
    """One stream thread of a client (an asyncio task, not an OS thread)."""

    def __init__(
        self,
        index: int,
        *,
        config: StreamsConfig,
        process_id: uuid.UUID,
        metadata: TopologyMetadata,
        state_directory: StateDirectory,
        task_creator: TaskCreator,
        end_offsets: ChangelogEndOffsets,
        task_assignor: TaskAssignor,
        assignment_configs: AssignmentConfigs,
        restore_listener: StateRestoreListener,
        clients: KafkaClientSupplier,
        assignment_history: AssignmentHistoryWriter | None = None,
        metadata_state: StreamsMetadataState | None = None,
        watermark: StreamTimeWatermark | None = None,
    ) -> None:
        self.config = config
        # Kafka divides statestore.uncommitted.max.bytes equally across the stream threads; -1: no bound
        limit = config.statestore_uncommitted_max_bytes
        self._uncommitted_max_bytes = limit if limit < 0 else limit // config.num_stream_threads
        self.process_id = process_id
        self.name = f"{config.application_id}-{process_id}-StreamThread-{index}"
        # interactive queries: told when a rebalance starts and which host runs which tasks once it ends
        self._metadata_state = metadata_state
        if metadata_state is not None:
            metadata_state.register_thread(self.name)
        self._metadata = metadata
        self._end_offsets = end_offsets
        self._pending_info: AssignmentInfo | None = None
        self._rebalancing = False  # from the start of a join until its assignment is applied
        self._probing_deadline_ms: int | None = None
        self._unique_field = 0
        self._failure: BaseException | None = None
        self._stopping = False
        self._closing = False
        self.commit_barrier: CommitBarrier | None = None  # set by KafkaStreams.close for its threads
        self._task: asyncio.Task[None] | None = None
        self.stall_watch = StallWatch(config.session_timeout_ms / 1000)
        self._stall_watch_task: asyncio.Task[None] | None = None
        # Serialises the loop's task work with the rebalance callbacks (which run in aiokafka's coordinator
        # task). Never held across the main consumer's getmany(): aiokafka's docs warn that deadlocks.
        self._lock = asyncio.Lock()

        recorder = None if assignment_history is None else _HistoryRecorder(self, assignment_history)
        self.assignor = StreamsPartitionAssignor(self, metadata, task_assignor, assignment_configs, recorder)
        instance_id = f"{config.group_instance_id}-{index}" if config.group_instance_id else None
        self.consumer = clients.main_consumer(config, f"{self.name}-consumer", instance_id)
        self.restore_consumer = clients.restore_consumer(config, f"{self.name}-restore-consumer")
        transactional_id = f"{config.application_id}-{process_id}-{index}" if config.exactly_once else None
        self._transactional_id = transactional_id

        def new_producer() -> AIOKafkaProducer:
            return clients.producer(config, f"{self.name}-producer", transactional_id)

        collector = RecordCollector(
            new_producer(),
            metadata.changelog_topics(),
            transactional=config.exactly_once,
            producer_factory=new_producer if config.exactly_once else None,
            froze_after=self.stall_watch.froze_after,
        )
        self.resources = ThreadResources(
            cache=RecordCache(max(0, config.statestore_cache_max_bytes // config.num_stream_threads)),
            collector=collector,
            handlers=ThreadHandlers(
                collector,
                deserialization=config.deserialization_exception_handler,
                processing=config.processing_exception_handler,
                production=config.production_exception_handler,
                dead_letter_topic=config.dead_letter_topic,
            ),
        )
        self.changelog_reader = ChangelogReader(
            self.restore_consumer,
            restore_listener,
            config.restore_chunk_records,
            log_end_offsets=end_offsets.log_end_offsets,
            committed_offsets=self._committed_offsets,
            limit_refresh_ms=config.commit_interval_ms,
        )
        self.task_manager = TaskManager(
            self.name,
            self.consumer,
            task_creator,
            self.resources,
            state_directory,
            self.changelog_reader,
            exactly_once=config.exactly_once,
            group_id=config.application_id,
            stall_watch=self.stall_watch,
            buffered_records_per_partition=config.buffered_records_per_partition,
            event_time_slice_ms=config.event_time_slice_ms,
            merged_subtopologies=metadata.repartitioning_subtopologies(),
            watermark=watermark,
        )
        self._watermark = watermark

    async def _committed_offsets(self, partitions: Sequence[TopicPartition]) -> dict[TopicPartition, int]:
        """The group's committed offsets of `partitions` (0 where none is committed, as Kafka defaults them)."""
        committed = await self.consumer.committed_offsets(partitions)
        return {tp: committed[tp].offset if tp in committed else 0 for tp in partitions}

    # ---- lifecycle ----------------------------------------------------------------------------------------

    async def start(self) -> None:
        await self.resources.collector.start(self._transactional_id, self.config.max_block_ms)
        await self.restore_consumer.start()
        await self.consumer.start()
        self.consumer.subscribe(self._metadata.source_topics(), _Listener(self), self.assignor)
        self._stall_watch_task = asyncio.create_task(self.stall_watch.run(), name=f"{self.name}-stall-watch")
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
                await self.run_once()
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
        if self._stall_watch_task is not None:
            self._stall_watch_task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._stall_watch_task
        async with self._lock:
            self._closing = True  # rebalance callbacks from here on leave the tasks alone
            await self.task_manager.shutdown(clean)
            if self.commit_barrier is not None:  # the client's other threads commit before this one leaves
                await self.commit_barrier.arrive()
            if self._watermark is not None:
                self._watermark.forget(self.name)
            if self.config.leave_group_on_close and self.config.group_instance_id:
                await self.consumer.leave_group()
        for closer in (self.consumer.stop, self.restore_consumer.stop, self.resources.collector.producer.stop):
            try:
                await closer()
            except Exception:
                log.exception("stream-thread [%s] closing a client failed", self.name)
        log.info("stream-thread [%s] stopped (clean=%s)", self.name, clean)

    # ---- the loop -----------------------------------------------------------------------------------------

    async def run_once(self) -> None:
        """One iteration: restore step, poll, process, maybe commit, maybe trigger a probing rebalance."""
        if self._failure is not None:
            raise self._failure
        task_manager = self.task_manager
        async with self._lock:
            if task_manager.has_pending():
                task_manager.open_pending()
            restoring = bool(task_manager.restoring())
            restored = 0
            if restoring or task_manager.standby:
                restored = await task_manager.restore(timeout_ms=0 if task_manager.has_running() else 20)
            await task_manager.initialize_task_times()
        # while restoring, poll briefly so restoration keeps going; never spin without waiting
        poll_ms = 100 if not restoring else (0 if restored else 20)
        # a wall-clock punctuator does not wait for records, nor does a task whose idle deadline passes
        for due in (task_manager.ms_until_punctuation(), task_manager.ms_until_idle_deadline()):
            if due is not None:
                poll_ms = min(poll_ms, due)
        fetch = task_manager.fetch_partitions()  # None: all; a partition whose queue is full is not fetched from
        if fetch == []:  # every queue is full: the thread waits for the others to catch up (watermark)
            if self._watermark is None:
                await asyncio.sleep(poll_ms / 1000)
            else:
                await self._watermark.changed(poll_ms / 1000)
            batch: Mapping[TopicPartition, Sequence[Any]] = {}
        else:
            batch = await self.consumer.getmany(
                *(fetch or ()), timeout_ms=poll_ms, max_records=self.config.max_poll_records
            )
        async with self._lock:
            if await task_manager.drop_if_frozen():  # frozen while waiting for records
                return
            processed = task_manager.process(batch)  # also takes records buffered earlier, once their task is ready
            if task_manager.punctuate() or processed:  # punctuators run in their tasks: their output commits with them
                if await task_manager.drop_if_frozen():  # frozen while processing: its output must not be sent
                    return
                if not await task_manager.drain():
                    return
            # no periodic commit while the group rebalances (Kafka Streams' rebalanceInProgress): it would carry a
            # generation the join may replace any moment; revocations still commit what they hand over
            due = (time.monotonic() - task_manager.last_commit) * 1000 >= self.config.commit_interval_ms
            # KIP-892: uncommitted state past this thread's share of statestore_uncommitted_max_bytes commits early
            due = due or (
                self._uncommitted_max_bytes >= 0 and task_manager.uncommitted_bytes() > self._uncommitted_max_bytes
            )
            if due and not self._rebalancing:
                await task_manager.commit_or_migrate()
        await asyncio.sleep(0)  # every iteration yields, even when all awaits above completed at once
        task_manager.observe_states(time.monotonic())  # metrics: time each task spends not RUNNING
        if self._probing_deadline_ms is not None and time.time() * 1000 >= self._probing_deadline_ms:
            log.info(
                "stream-thread [%s] Triggering the followup rebalance scheduled for %d ms.",
                self.name,
                self._probing_deadline_ms,
            )
            self._probing_deadline_ms = None
            self.consumer.request_rejoin()

    async def run_as_punctuation(self, task_id: TaskId, body: Callable[[StreamTask], Awaitable[None]]) -> bool:
        """Run `body(task)` as a wall-clock punctuation of active task `task_id`, if this thread processes it.

        It holds the loop's lock throughout, so no record is processed and nothing commits meanwhile: what
        `body` writes to the task's stores and sends is drained into the task's output and commits with it,
        all of it or (a crash before that commit) none. The record context is a punctuation's (now, no topic).
        False if the task is not processing here; `body`'s error propagates, after what it did was drained.
        """
        async with self._lock:
            task = self.task_manager.processing(task_id)
            if self._closing or task is None or await self.task_manager.drop_if_frozen():
                return False
            try:
                with punctuation_record(task.record_context, system_time_ms()):
                    await body(task)
            finally:
                await self.task_manager.drain()
        return True

    # ---- rebalance callbacks and the assignor's host interface ----------------------------------------------

    async def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        """Commit, then suspend the tasks that lose a partition (under eager: every task, before each join)."""
        if not revoked:
            return
        if self._metadata_state is not None:  # before waiting for the lock: queries stop answering at once
            self._metadata_state.rebalance_started(self.name)
        async with self._lock:
            if self._closing:
                return
            try:
                if not await self.task_manager.drop_if_frozen(rejoin=False):
                    await self.task_manager.handle_revocation(revoked)
            except Exception as exc:  # the membership would fail the group: surface it from the loop instead
                log.exception("stream-thread [%s] failed while revoking %s", self.name, sorted(revoked))
                self._failure = exc

    async def on_partitions_lost(self, lost: set[TopicPartition]) -> None:
        """The coordinator dropped this member: its partitions may have new owners already."""
        if self._metadata_state is not None:
            self._metadata_state.rebalance_started(self.name)
        async with self._lock:
            if self._closing:
                return
            try:
                await self.task_manager.handle_lost_all("the group coordinator dropped this member")
            except Exception as exc:
                log.exception("stream-thread [%s] failed while closing lost tasks", self.name)
                self._failure = exc

    async def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        del assigned  # the assignment info names the tasks (kept, gained and lost)
        async with self._lock:
            self._rebalancing = False
            info, self._pending_info = self._pending_info, None
            if info is None or self._closing:
                return
            try:
                self.task_manager.handle_assignment(info)
            except Exception as exc:
                log.exception("stream-thread [%s] failed to apply its assignment", self.name)
                self._failure = exc
                return
            if self._metadata_state is not None:
                self._metadata_state.assignment_applied(self.name, info.tasks_by_host)
            if self._watermark is not None:
                generation = self.consumer.group_metadata().generation_id
                merged = self._metadata.repartitioning_subtopologies()
                tasks: dict[int, list[int]] = {subtopology: [] for subtopology in merged}
                for task in info.active_tasks:
                    if task.subtopology in merged:
                        tasks[task.subtopology].append(task.partition)
                self._watermark.assignment_applied(
                    self.name,
                    generation if generation >= 0 else None,
                    tasks,
                    {subtopology: self._metadata.num_tasks(subtopology) for subtopology in merged},
                )
            self._probing_deadline_ms = None if info.next_rebalance_ms == NO_FOLLOWUP else info.next_rebalance_ms
            if info.next_rebalance_ms == 0:
                # tasks were withheld from this thread until their owner revokes them: rejoin now, from within the
                # rebalance, so this member's next JoinGroup is the one that owner's rejoin starts (asked later,
                # from the loop, it would come after that round began and start one more)
                self._probing_deadline_ms = None
                self.consumer.request_rejoin()
            followup = (
                "" if info.next_rebalance_ms == NO_FOLLOWUP else f", followup rebalance at {info.next_rebalance_ms}"
            )
            log.info(
                "stream-thread [%s] assigned active %s standby %s%s",
                self.name,
                sorted(map(str, info.active_tasks)),
                sorted(map(str, info.standby_tasks)),
                followup,
            )

    async def subscription_info(self) -> SubscriptionInfo:
        """Called by the assignor before every join: lock the task directories on disk that no other thread
        holds, so this thread may report their checkpointed offsets, then describe what it has."""
        async with self._lock:
            self._rebalancing = True
            if not self._closing:
                self.task_manager.lock_task_dirs()
            return self._subscription_info()

    def _subscription_info(self) -> SubscriptionInfo:
        self._unique_field += 1
        return SubscriptionInfo(
            process_id=self.process_id,
            task_offset_sums=self.task_manager.task_offset_sums(),
            prev_active=frozenset(self.task_manager.active),
            prev_standby=frozenset(self.task_manager.standby),
            host_info=self.config.application_server,
            unique_field=self._unique_field,
            client_tags=self.config.client_tags,
        )

    async def changelog_end_offset_sums(self, stateful_tasks: list[TaskId]) -> dict[TaskId, int]:
        await self._end_offsets.refresh(self._committed_offsets)
        return self._end_offsets.sums(stateful_tasks)

    async def replica_racks(self, topics: list[str]) -> dict[tuple[str, int], frozenset[str]]:
        """A failure leaves the racks unknown: this rebalance assigns without them (as Kafka Streams' RackUtils)."""
        admin = connect.admin(self.config.cluster, client_id=f"{self.name}-admin")
        try:
            await admin.start()
            return await describe_replica_racks(admin, topics)
        except KafkaError as exc:
            log.error("stream-thread [%s] cannot describe the racks of %s: %s", self.name, topics, exc)
            return {}
        finally:
            await admin.close()

    def on_assignment_info(self, info: AssignmentInfo, partitions: list[TopicPartition]) -> None:
        self._pending_info = info

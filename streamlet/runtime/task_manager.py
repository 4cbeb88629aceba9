"""TaskManager: the tasks of one stream thread and every transition they go through.

It applies assignments (open, resume, close), commits, and names the ways a thread can stop owning tasks,
because each must treat local state differently (Kafka Streams' TaskManager):

* **revoked** (eager rebalance, membership intact): commit, then suspend. Tasks stay open, and a task
  assigned back resumes at once;
* **migrated** (a commit found that the group already moved the partitions): close dirty; nothing
  committed or checkpointed, state restores from the last checkpoint if the task comes back;
* **lost** (the coordinator dropped this member): close dirty without flushing anything, since the
  tasks' new owners may already have written newer state;
* **closed** (assignment moved a task away, or shutdown): clean close, i.e. flush and checkpoint.

It also holds the task directory locks of its thread: a task whose directory another thread of the
client still holds waits, and is retried, until that thread closes it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Collection, Mapping, Sequence

from aiokafka.errors import CommitFailedError, IllegalStateError, KafkaError
from aiokafka.structs import OffsetAndMetadata, TopicPartition

from streamlet.assignment.protocol import AssignmentInfo, AssignorErrorCode
from streamlet.errors import StateStoreCorruptedError, StateStoreError, StreamletError
from streamlet.kafka.group.membership import RebalanceInProgressCommitError
from streamlet.runtime.changelog_reader import ChangelogReader
from streamlet.runtime.clients import MainConsumer
from streamlet.runtime.event_time_merge import MERGE_DISABLED, EventTimeMerge
from streamlet.runtime.fetched_records import FetchedRecord
from streamlet.runtime.metrics_event import PENDING, STANDBY
from streamlet.runtime.partition_group import LagProvider
from streamlet.runtime.punctuation import system_time_ms
from streamlet.runtime.record_collector import RecordCollector, RetriableProductionError, TransactionFencedError
from streamlet.runtime.stall_watch import StallWatch
from streamlet.runtime.standby_task import StandbyTask
from streamlet.runtime.stream_task import StreamTask
from streamlet.runtime.stream_time_watermark import StreamTimeWatermark
from streamlet.runtime.task_creator import TaskCreator, ThreadResources
from streamlet.runtime.task_state import TaskState
from streamlet.runtime.tasks import Tasks
from streamlet.runtime.thread_metrics import ThreadMetrics
from streamlet.state.offset_sums import lock_non_empty_task_dirs, task_offset_sums
from streamlet.state.state_directory import StateDirectory
from streamlet.state.state_manager import ProcessorStateManager
from streamlet.task_id import TaskId

log = logging.getLogger("streamlet.thread")

# Kafka Streams writes a checkpoint on commit only once this many changelog records accumulated.
CHECKPOINT_OFFSET_DELTA = 10_000


# A store still corrupt after this many wipes is not a corrupt file but a broken disk or a bug: stop.
MAX_WIPES = 3


class TaskMigratedError(StreamletError):
    """The thread lost its group membership while committing; its tasks will be reassigned."""


class TaskManager:
    """Owned by one stream thread; every method runs under that thread's lock."""

    def __init__(
        self,
        name: str,
        consumer: MainConsumer,
        creator: TaskCreator,
        resources: ThreadResources,
        state_directory: StateDirectory,
        changelog_reader: ChangelogReader,
        *,
        exactly_once: bool = False,
        group_id: str = "",
        stall_watch: StallWatch | None = None,
        buffered_records_per_partition: int = 1_000,
        event_time_slice_ms: int = MERGE_DISABLED,
        merged_subtopologies: Collection[int] = (),
        watermark: StreamTimeWatermark | None = None,
    ) -> None:
        self.name = name  # the thread's name: owner of its task directory locks
        self._stall_watch = stall_watch
        self._exactly_once = exactly_once
        self._group_id = group_id
        self._consumer = consumer
        self._creator = creator
        self._resources = resources
        self._collector: RecordCollector = resources.collector
        self._state_directory = state_directory
        self._changelog_reader = changelog_reader
        self.tasks = Tasks()  # active and standby tasks, the pending ones, and their indexes
        self._wipes: dict[TaskId, int] = {}
        self._was_running: set[TaskId] = set()  # suspended by the last revocation: reported as running
        self._max_buffered = buffered_records_per_partition
        self._buffer_paused: set[TopicPartition] = set()  # paused because their queue is full
        # the single-partition tasks of each of `merged_subtopologies` (those writing to a repartition topic, where
        # the order across tasks matters), taken in event-time order across tasks (off: MERGE_DISABLED)
        self._slice_ms = event_time_slice_ms
        self._merged_subtopologies = frozenset(merged_subtopologies)
        self._merges: dict[int, EventTimeMerge] = {}
        self._merged_tasks: dict[int, list[StreamTask]] = {}
        self._merge_of: dict[TopicPartition, EventTimeMerge] = {}
        self._full: set[TopicPartition] = set()  # merged partitions with more than their bound queued
        self._watermark = watermark if watermark is not None else StreamTimeWatermark()
        self.last_commit = time.monotonic()
        self.metrics = ThreadMetrics()

    # ---- queries ------------------------------------------------------------------------------------------

    @property
    def active(self) -> Mapping[TaskId, StreamTask]:
        """The active tasks by id (read-only: `tasks` changes them)."""
        return self.tasks.active

    @property
    def standby(self) -> Mapping[TaskId, StandbyTask]:
        """The standby tasks by id (read-only: `tasks` changes them)."""
        return self.tasks.standby

    def has_running(self) -> bool:
        return any(t.state is TaskState.RUNNING for t in self.active.values())

    def restoring(self) -> list[StreamTask]:
        return [t for t in self.active.values() if t.state is TaskState.RESTORING]

    def processing(self, task_id: TaskId) -> StreamTask | None:
        """The active task `task_id` if it is processing here (RUNNING, with its committed time restored)."""
        task = self.active.get(task_id)
        return task if task is not None and _processing(task) else None

    def has_pending(self) -> bool:
        return self.tasks.has_pending()

    def task_states(self) -> dict[TaskId, str]:
        """Every task this thread owns and its state: an active's, PENDING (not opened yet) or STANDBY."""
        states = {t: PENDING if is_active else STANDBY for t, is_active in self.tasks.pending.items()}
        states.update((t, STANDBY) for t in self.standby)
        states.update((t, task.state.value) for t, task in self.active.items())
        return states

    def task_offset_sums(self) -> dict[TaskId, int]:
        """What this thread reports in its subscription (TaskManager#getTaskOffsetSums)."""
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
        return task_offset_sums(
            self._state_directory,
            self._state_directory.locked_tasks(self.name),
            running_active_tasks=running,
            owned_changelog_offsets=owned,
        )

    def lock_task_dirs(self) -> None:
        """Before a join: lock the task dirs on disk nobody else holds, so this thread may report them."""
        lock_non_empty_task_dirs(self._state_directory, self.name)

    def observe_states(self, now: float) -> None:
        """For the metrics, once per loop iteration: which active tasks are not RUNNING (unopened ones too)."""
        metrics = self.metrics
        if metrics.due(now):
            waiting = [t for t, is_active in self.tasks.pending.items() if is_active]
            metrics.observe(
                [t for t, task in self.active.items() if task.state is not TaskState.RUNNING] + waiting, now
            )

    # ---- assignment ---------------------------------------------------------------------------------------

    def handle_assignment(self, info: AssignmentInfo) -> None:
        """Close what this thread lost, resume what it kept, open what it gained."""
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
        tasks = self.tasks
        tasks.retain_pending(new_active | new_standby)
        for task_id in sorted(new_active):
            kept = tasks.active.get(task_id)
            if kept is None:
                tasks.add_pending(task_id, active=True)
            elif kept.state is TaskState.SUSPENDED:
                kept.resume()
        for task_id in sorted(new_standby - set(tasks.standby)):
            tasks.add_pending(task_id, active=False)
        self._was_running = set()
        self.metrics.rebalances += 1
        self.release_unowned_task_dirs(new_active | new_standby)
        self.open_pending()
        self._reindex_merges()
        self._pause_restoring()

    async def handle_revocation(self, revoked: Collection[TopicPartition]) -> None:
        """The group takes `revoked` away (cooperative: the partitions that move; eager: everything).

        Commit (every task: one commit, or one transaction under exactly-once), then suspend the tasks that lose
        a partition: they stay open until the assignment closes them (a clean close checkpoints), or resumes
        them if they came back. Tasks that keep their partitions go on processing.
        """
        gone = set(revoked)
        losing = [t for t in self.active.values() if gone.intersection(t.partitions)]
        if losing and await self.commit_or_migrate():
            for task in losing:
                if task.state is TaskState.RUNNING:
                    self._was_running.add(task.task_id)
                    task.suspend()
                    self._drop_buffers(task)

    async def handle_lost_all(self, reason: str) -> None:
        """The coordinator dropped this member: its partitions may already have new owners.

        Close every active task dirty with nothing flushed: cached updates are dropped, no changelog or output
        record is sent, no offset is committed and no checkpoint written. Whatever the tasks did since their
        last commit is redone by whoever owns them now (at-least-once). Standbys write nothing and stay.
        """
        if self.active:
            log.warning(
                "stream-thread [%s] %s; closing %d active tasks as lost (nothing flushed or committed)",
                self.name,
                reason,
                len(self.active),
            )
        for task in list(self.active.values()):
            self._close_active(task, clean=False)
        await self._discard_output()
        self._was_running = set()

    async def _discard_output(self) -> None:
        """Nothing of the closed tasks may be written: drop the queue (and abort the open transaction)."""
        if self._exactly_once:
            await self._collector.abort_transaction()
        else:
            self._collector.discard()

    async def handle_migrated(self, reason: BaseException) -> None:
        """The group moved this thread's partitions before it could commit: close actives dirty."""
        log.warning("%s; closing %d active tasks without committing and rejoining the group", reason, len(self.active))
        for task in list(self.active.values()):
            self._close_active(task, clean=False)
        await self._discard_output()
        self._was_running = set()
        # The consumer may still hold the partitions (e.g. its transaction timed out, its membership did not):
        # give them up (their positions are past what was committed) and rejoin, as Kafka Streams unsubscribes
        self._consumer.drop_partitions_and_rejoin()

    def open_pending(self) -> None:
        """Open assigned tasks whose directory or store was not available yet.

        Another thread of this client may still hold the task directory (it releases it on close), or a store
        instance may still hold RocksDB's lock: both are retried, the store lock with exponential backoff and
        a bounded log rate. A corrupt store is wiped, with one WARNING, and restored from its changelog.
        """
        opened = False
        now = time.monotonic()
        tasks = self.tasks
        for task_id, is_active in list(tasks.pending.items()):
            retry = tasks.open_retry(task_id)
            if retry is not None and now < retry.next_attempt:
                continue
            if not self._state_directory.lock_task(task_id, self.name):
                continue
            try:
                if is_active:
                    tasks.add_active(self._creator.create_active(task_id, self._resources))
                else:
                    tasks.add_standby(self._creator.create_standby(task_id))
            except StateStoreCorruptedError as exc:
                wipes = self._wipes.get(task_id, 0) + 1
                if wipes > MAX_WIPES:
                    self._state_directory.unlock_task(task_id, self.name)
                    raise StateStoreError(
                        f"task {task_id}: its state is still unreadable after {MAX_WIPES} wipes: {exc}"
                    ) from exc
                self._wipes[task_id] = wipes
                log.warning("task %s: wiping its local state, which restores from the changelog: %s", task_id, exc)
                self._creator.wipe_local_state(task_id)  # under the directory lock
                self._state_directory.unlock_task(task_id, self.name)
                continue
            except StateStoreError as exc:  # locked, or an I/O error that may pass
                self._state_directory.unlock_task(task_id, self.name)
                retry = tasks.open_failed(task_id, now)
                if retry.should_log():
                    log.warning(
                        "stream-thread [%s] cannot open task %s yet (attempt %d, next in %.1f s): %s",
                        self.name,
                        task_id,
                        retry.attempts,
                        retry.next_attempt - now,
                        exc,
                    )
                continue
            tasks.remove_pending(task_id)
            self._wipes.pop(task_id, None)
            opened = True
        if opened:
            self._reindex_merges()
            self._pause_restoring()

    def release_unowned_task_dirs(self, keep: set[TaskId]) -> None:
        """Unlock the task dirs this thread holds outside `keep` (after an assignment, or all on shutdown)."""
        directory = self._state_directory
        for task in directory.locked_tasks(self.name) - keep:
            directory.unlock_task(task, self.name)

    # ---- processing ---------------------------------------------------------------------------------------

    def process(self, batch: Mapping[TopicPartition, Sequence[FetchedRecord]]) -> int:
        """Hand each partition's records to its task; rewind the consumer for a task that is not RUNNING.

        Records wait in queues of at most about `buffered_records_per_partition`: the single-partition tasks of a
        sub-topology share one `EventTimeMerge`, which takes their records in event-time order across the tasks
        (a full queue's partition is left out of the next polls, `fetch_partitions`; with
        `event_time_slice_ms=-1` such a task processes its batch at once instead); a task with several input
        partitions has its own `PartitionGroup` (a full queue's partition is paused). Both take what they may on
        every loop: one waiting for an idle deadline or a fetch needs no new records here to go on. Returns how
        many records were processed.
        """
        by_partition = self.tasks.by_partition
        processed = self.metrics.processed
        assigned = self._consumer.assignment()
        total = 0
        for tp, records in batch.items():
            task = by_partition.get(tp)
            if task is None or not _processing(task):
                # the consumer's position already moved past these records: rewind, or they are lost
                if tp in assigned:
                    self._consumer.seek(tp, records[0].offset)
                continue
            group = task.partition_group
            if group is not None:
                queued = group.add_records(tp, records)
            else:
                merge = self._merge_of.get(tp)
                if merge is None:
                    task.process(tp, records)
                    processed[task.task_id] = processed.get(task.task_id, 0) + len(records)
                    total += len(records)
                    continue
                if merge.add_records(tp, records) > self._max_buffered:
                    self._full.add(tp)  # not fetched from until it drains (`fetch_partitions`)
                continue
            if queued > self._max_buffered:
                self._consumer.pause(tp)
                self._buffer_paused.add(tp)
        if self._merges:
            total += self._process_merged()
        if self.tasks.grouped:
            total += self._process_buffered()
        return total

    def _process_merged(self) -> int:
        """Take the queued records of each sub-topology's single-partition tasks slice by slice, smallest head
        timestamp first (`EventTimeMerge`), no further than the client's other threads allow; report where this
        thread then stands. Returns how many records were processed."""
        processed = self.metrics.processed
        watermark = self._watermark
        by_partition = self.tasks.by_partition
        bound = self._max_buffered
        total = 0
        for subtopology, merge in self._merges.items():
            lag = self._merge_lag(subtopology, merge)
            ceiling = watermark.ceiling(self.name, subtopology, self._slice_ms)
            while (taken := merge.next_slice(lag, ceiling)) is not None:
                tp, run = taken
                task = by_partition[tp]
                task.process(tp, run)
                processed[task.task_id] = processed.get(task.task_id, 0) + len(run)
                total += len(run)
            watermark.report(self.name, subtopology, merge.position(lag))
        if self._full:
            self._full = {tp for tp in self._full if tp in self._merge_of and self._merge_of[tp].size(tp) > bound}
        return total

    def _merge_lag(self, subtopology: int, merge: EventTimeMerge) -> LagProvider:
        """Tell `merge` which of its tasks are RUNNING, and how to read their partitions' lag.

        A task that is not RUNNING (restoring, suspended) is left out: it neither is taken from nor holds the
        others back, however long its restoration takes. A RUNNING task whose committed stream time is not read
        yet has no records, but it is about to fetch them from wherever it stands: its partitions count as of
        unknown lag, so this thread's other tasks, and the other threads, wait for them."""
        pending: set[TopicPartition] = set()
        for task in self._merged_tasks[subtopology]:
            running = task.state is TaskState.RUNNING
            for tp in task.partitions:
                merge.set_processing(tp, running)
                if running and not task.time_initialized:
                    pending.add(tp)
        lag = self._consumer.lag
        if not pending:
            return lag
        return lambda tp: None if tp in pending else lag(tp)

    def fetch_partitions(self) -> list[TopicPartition] | None:
        """The partitions the next poll should return records of: None for all; else every assigned one but
        those whose merge queue is full (an empty list: all are full, there is nothing to fetch for now).

        A full queue's partition is left out of the poll rather than paused: aiokafka drops the records it
        prefetched for a paused partition and fetches them again after `resume`, while records of a partition
        left out of a poll stay buffered in the consumer (one fetch response per partition at most)."""
        full = self._full
        if not full:
            return None
        return [tp for tp in self._consumer.assignment() if tp not in full]

    def _process_buffered(self) -> int:
        now_ms = system_time_ms()
        lag = self._consumer.lag
        processed = self.metrics.processed
        total = 0
        for task in self.tasks.grouped:
            if not _processing(task):
                continue
            count = task.process_buffered(now_ms, lag)
            if count:
                processed[task.task_id] = processed.get(task.task_id, 0) + count
                total += count
            if self._buffer_paused:
                self._resume_drained(task)
        return total

    def _resume_drained(self, task: StreamTask) -> None:
        """Resume the paused partitions of `task` whose queue is back within its bound."""
        group = task.partition_group
        assert group is not None
        drained = [tp for tp in task.partitions if tp in self._buffer_paused and group.size(tp) <= self._max_buffered]
        if drained:
            self._buffer_paused.difference_update(drained)
            self._consumer.resume(*drained)

    def ms_until_idle_deadline(self) -> int | None:
        """How long until a task waiting for an empty partition may process without it (None: none waits)."""
        now_ms = system_time_ms()
        waits = [
            task.partition_group.ms_until_idle_deadline(now_ms)
            for task in self.tasks.grouped
            if task.partition_group is not None and _processing(task)
        ]
        return min((wait for wait in waits if wait is not None), default=None)

    def punctuate(self) -> bool:
        """Fire the due punctuators of every running task (Kafka's `TaskManager#punctuate`, once per loop)."""
        punctuated = False
        for task in self.active.values():
            if _processing(task) and task.punctuate():
                punctuated = True
        return punctuated

    def ms_until_punctuation(self) -> int | None:
        """How long until some running task's wall-clock punctuator is due (None: none scheduled)."""
        waits = [task.ms_until_punctuation() for task in self.active.values() if _processing(task)]
        return min((wait for wait in waits if wait is not None), default=None)

    async def restore(self, timeout_ms: int) -> int:
        """One bounded restore step; caught-up tasks go RUNNING and their input partitions resume."""
        result = await self._changelog_reader.restore(self.restoring(), self.standby.values(), timeout_ms)
        for task in result.completed:
            task.transition_to(TaskState.RUNNING)
            assigned = self._consumer.assignment()
            self._consumer.resume(*[tp for tp in task.partitions if tp in assigned])
            log.info("stream-thread [%s] task %s restored, now RUNNING", self.name, task.task_id)
        return result.applied

    async def initialize_task_times(self) -> None:
        """Give every task that just went RUNNING the partition times of its last commit (one OffsetFetch for
        all of them), before it processes or punctuates: stream time survives restarts and migrations."""
        waiting = [t for t in self.active.values() if t.state is TaskState.RUNNING and not t.time_initialized]
        if not waiting:
            return
        committed = await self._consumer.committed_offsets([tp for task in waiting for tp in task.partitions])
        for task in waiting:
            task.initialize_time(committed)

    async def drain(self) -> bool:
        """Hand the processed records to the producer; False if that showed the transaction is gone (the
        tasks were closed dirty, as migrated)."""
        try:
            await self._collector.drain()
            return True
        except TransactionFencedError as exc:
            await self.handle_migrated(TaskMigratedError(f"stream-thread [{self.name}] {exc}"))
            return False

    # ---- commit -------------------------------------------------------------------------------------------

    async def drop_if_frozen(self, *, rejoin: bool = True) -> bool:
        """If this process was frozen past the session timeout, take the lost path and rejoin.

        No heartbeat ran while it was frozen either, so the group has most likely moved on: a zombie that
        woke up must not hand anything it computed to the producer. Checked before anything is produced.
        """
        if self._stall_watch is None or not self._stall_watch.stalled():
            return False
        await self.handle_lost_all(
            f"this process did not run for longer than the session timeout ({self._stall_watch.threshold_s:g} s)"
        )
        if rejoin:  # not from a rebalance callback: that rebalance is the rejoin
            self._consumer.drop_partitions_and_rejoin()
        return True

    def uncommitted_bytes(self) -> int:
        """What the active tasks' transactional stores buffer until the next commit (exactly-once)."""
        return sum(
            task.state_manager.approximate_num_uncommitted_bytes()
            for task in self.active.values()
            if task.state_manager is not None
        )

    async def commit_or_migrate(self, *, force_checkpoint: bool = False) -> bool:
        """Commit; if the group took this member's partitions meanwhile, take the lost or migrated path instead."""
        if self._consumer.generation_lost():
            await self.handle_lost_all("the group coordinator no longer knows this member")
            return False
        if await self.drop_if_frozen():
            return False
        try:
            await self.commit(force_checkpoint=force_checkpoint)
            return True
        except TaskMigratedError as exc:
            await self.handle_migrated(exc)
            return False

    async def commit(self, *, force_checkpoint: bool = False) -> None:
        """Flush caches, then the producer, then commit offsets, then checkpoint.

        A checkpoint therefore never claims more than Kafka has acknowledged. Under exactly-once the records and
        the offsets commit as one transaction, and only then do the stores' uncommitted writes reach RocksDB,
        with their changelog offsets (KIP-892, `commit_stores`): a crash at any point leaves every store at a
        committed state it knows the offset of. Standbys only ever hold committed data and checkpoint as usual.
        """
        started = self.last_commit = time.monotonic()
        running = [t for t in self.active.values() if t.state in (TaskState.RUNNING, TaskState.SUSPENDED)]
        for task in running:
            task.flush_caches()
        offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        for task in running:
            offsets.update(task.committable_offsets())
        if self._exactly_once:
            acked = await self._commit_transaction(offsets)
        else:
            try:
                acked = await self._collector.flush()
            except RetriableProductionError as exc:
                raise TaskMigratedError(f"stream-thread [{self.name}] {exc} (Kafka's TaskCorruptedException)") from exc
            if not await self._commit_offsets(offsets):
                offsets = {}  # not committed: nothing is marked, the next commit sends them again
        # a source topic reused as a changelog is checkpointed at the offsets consumed from it, under the ones the
        # producer acknowledged (Kafka's StreamTask#checkpointableOffsets); other input partitions are ignored
        consumed = {tp: meta.offset - 1 for tp, meta in offsets.items()}
        for task in running:
            if task.state_manager is not None:
                task.state_manager.update_changelog_offsets(consumed)
                task.state_manager.update_changelog_offsets(acked)
            task.mark_committed(offsets)
        if self._exactly_once:
            for task in running:
                if task.state_manager is not None:
                    # a large batch of writes: RocksDB releases the GIL, so the loop goes on meanwhile
                    await asyncio.to_thread(task.state_manager.commit_stores)
        if force_checkpoint or not self._exactly_once:
            for task in running:
                await _maybe_checkpoint(task.state_manager, force_checkpoint)
        for standby in self.standby.values():
            await _maybe_checkpoint(standby.state_manager, force_checkpoint)
        self.metrics.record_commit(time.monotonic() - started)

    async def _commit_offsets(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> bool:
        """False if the group is between a JoinGroup and its SyncGroup: the member keeps its tasks (under the
        cooperative protocol they may well stay), and the offsets go with the next commit."""
        if not offsets:
            return True
        try:
            await self._consumer.commit(offsets)
            return True
        except RebalanceInProgressCommitError:
            log.info("stream-thread [%s] the group is rebalancing: offsets are committed at the next commit", self.name)
            return False
        except (CommitFailedError, IllegalStateError) as exc:
            raise TaskMigratedError(f"stream-thread [{self.name}] lost its partitions: {exc}") from exc

    async def _commit_transaction(
        self, offsets: Mapping[TopicPartition, OffsetAndMetadata]
    ) -> dict[TopicPartition, int]:
        try:
            return await self._collector.commit_transaction(offsets, self._group_id, self._consumer.group_metadata())
        except (
            CommitFailedError,
            IllegalStateError,
            KafkaError,
            RetriableProductionError,
            TransactionFencedError,
        ) as exc:
            raise TaskMigratedError(f"stream-thread [{self.name}] could not commit its transaction: {exc!r}") from exc

    # ---- shutdown -----------------------------------------------------------------------------------------

    async def shutdown(self, clean: bool) -> None:
        """Close every task: clean = commit, flush and checkpoint; else close dirty. Releases all dirs."""
        if clean:
            try:
                await self.commit(force_checkpoint=True)
            except Exception:  # the close below still runs; tasks restore from the last checkpoint
                log.exception("stream-thread [%s] final commit failed", self.name)
                clean = False
        for task in list(self.active.values()):
            self._close_active(task, clean=clean)
        for standby in list(self.standby.values()):
            self._close_standby(standby, clean=clean)
        self.release_unowned_task_dirs(keep=set())

    # ---- internals ----------------------------------------------------------------------------------------

    def _reindex_merges(self) -> None:
        """Give each merged sub-topology's single-partition tasks one `EventTimeMerge` (after tasks open or close)."""
        if self._slice_ms == MERGE_DISABLED:
            return
        merged: dict[int, list[StreamTask]] = {}
        for task in self.active.values():
            if task.partition_group is None and task.task_id.subtopology in self._merged_subtopologies:
                merged.setdefault(task.task_id.subtopology, []).append(task)
        for subtopology in set(self._merges) - set(merged):  # its tasks closed and dropped their queues
            del self._merges[subtopology]
            self._watermark.report(self.name, subtopology, None)
        self._merge_of = {}
        for subtopology, tasks in merged.items():
            merge = self._merges.setdefault(subtopology, EventTimeMerge(self._slice_ms))
            owned = {tp for task in tasks for tp in task.partitions}
            for tp in merge.partitions() - owned:
                merge.remove_partition(tp)
            for task in tasks:
                for tp in task.partitions:
                    merge.add_partition(tp, task.graph.stampers.get(tp.topic))
                    self._merge_of[tp] = merge
        self._merged_tasks = merged
        for subtopology, merge in self._merges.items():  # new tasks hold the other threads back from now on
            self._watermark.report(self.name, subtopology, merge.position(self._merge_lag(subtopology, merge)))

    def _drop_buffers(self, task: StreamTask) -> None:
        """The task stops processing: its fetched, unprocessed records must be fetched again, so the consumer
        goes back to the first of each partition, and a partition paused for its full queue resumes."""
        assigned = self._consumer.assignment()
        first = task.clear_buffers()
        for tp in task.partitions:
            self._full.discard(tp)
            merge = self._merge_of.get(tp)
            offset = None if merge is None else merge.clear_partition(tp)
            if offset is not None:
                first[tp] = offset
        for tp, offset in first.items():
            if tp in assigned:
                self._consumer.seek(tp, offset)
        paused = [tp for tp in task.partitions if tp in self._buffer_paused]
        if paused:
            self._buffer_paused.difference_update(paused)
            self._consumer.resume(*[tp for tp in paused if tp in assigned])

    def _pause_restoring(self) -> None:
        assigned = self._consumer.assignment()
        paused = [tp for t in self.restoring() for tp in t.partitions if tp in assigned]
        if paused:
            self._consumer.pause(*paused)

    def _close_active(self, task: StreamTask, *, clean: bool) -> None:
        try:
            self._drop_buffers(task)
            # under exactly-once a dirty close drops the stores' uncommitted writes: they stay at their last commit
            task.close(clean=clean)
        finally:
            self.tasks.remove_active(task.task_id)
            self._state_directory.unlock_task(task.task_id, self.name)
            self._reindex_merges()

    def _close_standby(self, standby: StandbyTask, *, clean: bool) -> None:
        try:
            standby.close(clean=clean)
        finally:
            self.tasks.remove_standby(standby.task_id)
            self._state_directory.unlock_task(standby.task_id, self.name)


def _processing(task: StreamTask) -> bool:
    """A task processes and punctuates once RUNNING with its committed stream time restored."""
    return task.state is TaskState.RUNNING and task.time_initialized


async def _maybe_checkpoint(state_manager: ProcessorStateManager | None, force: bool) -> None:
    if state_manager is None:
        return
    if force or _offsets_since_checkpoint(state_manager) >= CHECKPOINT_OFFSET_DELTA:
        # RocksDB's flush releases the GIL; run it off the loop so heartbeats continue.
        await asyncio.to_thread(state_manager.checkpoint)


def _offsets_since_checkpoint(state_manager: ProcessorStateManager) -> int:
    checkpointed = state_manager.checkpointed_offsets()
    total = 0
    for tp, offset in state_manager.current_offsets().items():
        if offset is not None:
            total += offset - max(checkpointed.get(tp, -1), -1)
    return total

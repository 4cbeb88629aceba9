"""StreamTask: an active task, i.e. one partition of one sub-topology running on this thread.

The task is also the processor context its nodes see (`get_state_store`, `send`, `record_context`), so the
per-record path is direct attribute access with no extra indirection.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from aiokafka.structs import OffsetAndMetadata, TopicPartition

from streamlet.runtime.dropped_records import DESERIALIZATION, DroppedRecords
from streamlet.runtime.fetched_records import FetchedRecord, consumer_record
from streamlet.runtime.handlers import ThreadHandlers, flushed_record
from streamlet.runtime.local_tasks import LocalTasks
from streamlet.runtime.partition_group import LagProvider, PartitionGroup
from streamlet.runtime.partitioner import DeferredPartition
from streamlet.runtime.processor_graph import build_task_graph
from streamlet.runtime.record_collector import RecordCollector
from streamlet.runtime.record_context import RecordContext
from streamlet.runtime.task_context import RecordDeserializationError, RecordProcessingError
from streamlet.runtime.task_state import TaskState, checked_transition
from streamlet.runtime.topic_names import TopicNames
from streamlet.runtime.topic_partition_metadata import TopicPartitionMetadata, merge_processor_metadata
from streamlet.state.state_manager import ProcessorStateManager
from streamlet.task_id import TaskId
from streamlet.topology.timestamps import TimestampExtractor


class StreamTask:
    """Active task: owns its source partitions, its processor graph and its stores."""

    def __init__(
        self,
        task_id: TaskId,
        partitions: frozenset[TopicPartition],
        names: TopicNames,
        state_manager: ProcessorStateManager | None,
        collector: RecordCollector,
        handlers: ThreadHandlers,
        record_context: RecordContext | None = None,
        local_tasks: LocalTasks | None = None,
        timestamp_extractor: TimestampExtractor | None = None,
        global_stores: Mapping[str, Any] | None = None,
        max_task_idle_ms: int = 0,
        dropped: DroppedRecords | None = None,
    ) -> None:
        self.task_id = task_id
        self.partitions = partitions
        self.state_manager = state_manager
        self._stores: dict[str, Any] = {} if state_manager is None else dict(state_manager.stores())
        self._global_stores = global_stores or {}  # the client's, read by global table joins
        self._collector = collector
        self._handlers = handlers
        self._consumed: dict[TopicPartition, int] = {}  # the last processed offset: what commits cover
        self._committed: dict[TopicPartition, int] = {}
        # False until the partition times of the last commit are read back (`initialize_time`): till then the
        # task neither processes nor punctuates, as Kafka's task is not RUNNING before completeRestoration
        self.time_initialized = False
        self._processor_metadata: dict[str, int] = {}  # Kafka's ProcessorMetadata, carried from commit to commit
        # shared with the changelog sinks of the task's stores, which stamp records with its timestamp
        self.record_context = record_context if record_context is not None else RecordContext()
        self.state = TaskState.CREATED
        self.transition_to(TaskState.RESTORING)
        if state_manager is None:  # nothing to restore: restoration completes at once
            self.transition_to(TaskState.RUNNING)
        self._local_tasks = local_tasks
        if local_tasks is not None:
            local_tasks.add(self)
        self.graph = build_task_graph(names, task_id, self, self.record_context, timestamp_extractor, dropped=dropped)
        self.graph.on_flush_error = lambda exc: handlers.record_failed(
            task_id, flushed_record(self.record_context), exc, self.graph.dropped
        )
        # several input partitions: fetched records wait in per-partition queues and are taken smallest timestamp
        # first; a task with one partition is handed its records by the thread's `EventTimeMerge` (`process`)
        self.partition_group = (
            PartitionGroup(partitions, max_task_idle_ms, self.graph.stampers) if len(partitions) > 1 else None
        )

    # ---- processor context -------------------------------------------------------------------------------

    def get_state_store(self, name: str) -> Any:
        try:
            return self._stores[name]
        except KeyError:
            if name in self._global_stores:
                return self._global_stores[name]
            raise KeyError(f"task {self.task_id} has no state store {name!r}; stores: {sorted(self._stores)}") from None

    @property
    def stores(self) -> Mapping[str, Any]:
        return self._stores

    @property
    def queryable_stores(self) -> Mapping[str, Any]:
        """The stores as interactive queries read them: committed data only under exactly-once (KIP-892)."""
        return {} if self.state_manager is None else self.state_manager.queryable_stores()

    def local_stores(self, name: str) -> list[Any]:
        """The store `name` of every running active task of this client (this one included): a table's `items()`."""
        if self._local_tasks is None:
            return [self._stores[name]] if name in self._stores else []
        return self._local_tasks.running_stores(name)

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int | None = None,
        partition: int | DeferredPartition | None = None,
    ) -> None:
        self._collector.send(topic, key, value, timestamp, partition)

    @property
    def timestamp(self) -> int:
        """The timestamp of the record being processed (what agents' sends carry, as sinks do)."""
        return self.record_context.timestamp

    # ---- processing -----------------------------------------------------------------------------------------

    def process(self, tp: TopicPartition, records: Sequence[FetchedRecord]) -> None:
        """Process one partition's batch in offset order."""
        process = self.graph.process
        topic, partition = tp.topic, tp.partition
        context = self.record_context
        for record in records:
            context.headers = record.headers
            try:
                process(topic, partition, record.offset, record.timestamp, record.key, record.value)
            except RecordDeserializationError as exc:
                self._handlers.deserialization.handle(self.task_id, consumer_record(tp, record), exc)
                self.graph.dropped.record(exc.node or topic, DESERIALIZATION)  # the handler skipped it
            except RecordProcessingError as exc:
                self._handlers.record_failed(self.task_id, consumer_record(tp, record), exc, self.graph.dropped)
        if records:
            self._consumed[tp] = records[-1].offset

    def process_buffered(self, now_ms: int, lag: LagProvider) -> int:
        """Process the buffered records, the head with the smallest timestamp first, while the partition group
        is ready (Kafka's `StreamTask#process`); returns how many. A run of one queue's records that all come
        before every other queue's head is processed as a batch, in the same order as one at a time."""
        group = self.partition_group
        if group is None:
            return 0
        processed = 0
        while group.ready_to_process(now_ms, lag):
            while True:  # readiness only changes when a queue runs dry
                taken = group.next_run()
                if taken is None:
                    break
                queue, run = taken
                self.process(queue.partition, run)
                processed += len(run)
                if not queue.records:
                    break
        return processed

    def clear_buffers(self) -> dict[TopicPartition, int]:
        """Drop the unprocessed records (the task stops processing); returns the first unprocessed offset of
        each partition that had any: the consumer must fetch them again from there."""
        return {} if self.partition_group is None else self.partition_group.clear()

    def punctuate(self) -> bool:
        """Fire the punctuators that are due: stream-time ones for the records processed so far, wall-clock
        ones for now. True if any fired (they may have written to stores or sent records)."""
        punctuations = self.graph.punctuations
        stream = punctuations.punctuate_stream_time(self.graph.stream_time)
        return punctuations.punctuate_wall_clock_time() or stream

    def ms_until_punctuation(self) -> int | None:
        """How long until a wall-clock punctuator is due (None: none scheduled)."""
        return self.graph.punctuations.ms_until_wall_clock_punctuation()

    def flush_caches(self) -> None:
        """Flush buffering nodes and record caches: emits cached aggregates downstream and to the changelog."""
        self.graph.flush()
        if self.state_manager is not None:
            self.state_manager.flush_caches()

    def initialize_time(self, committed: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        """Resume each input partition at the partition time its last commit recorded, and stream time at
        the largest (Kafka's `StreamTask#initializeTaskTimeAndProcessorMetadata`)."""
        for tp in sorted(self.partitions):
            offset = committed.get(tp)
            if offset is None:
                continue
            metadata = TopicPartitionMetadata.decode(offset.metadata)
            self.graph.set_partition_time(tp.topic, tp.partition, metadata.partition_time)
            merge_processor_metadata(self._processor_metadata, metadata.processor_metadata)
        self.time_initialized = True

    def committable_offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """The next offset of each partition that consumed since the last commit, with its partition time."""
        out = {}
        graph = self.graph
        for tp, offset in self._consumed.items():
            if self._committed.get(tp) != offset:
                metadata = TopicPartitionMetadata(
                    graph.partition_time(tp.topic, tp.partition), self._processor_metadata
                )
                out[tp] = OffsetAndMetadata(offset + 1, metadata.encode())
        return out

    def mark_committed(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        for tp, meta in offsets.items():
            if tp in self.partitions:
                self._committed[tp] = meta.offset - 1

    def transition_to(self, new: TaskState) -> None:
        """Move to `new` along Kafka Streams' state table (`task_state`), or raise."""
        self.state = checked_transition(self.task_id, self.state, new)

    def suspend(self) -> None:
        """Stop processing (RESTORING or RUNNING); a suspended task keeps its stores open."""
        if self.state is not TaskState.SUSPENDED:
            self.transition_to(TaskState.SUSPENDED)

    def resume(self) -> None:
        """A suspended task that was RUNNING goes on: its stores are as it left them, so its restoration
        completes at once (Kafka's resume, then completeRestoration)."""
        self.transition_to(TaskState.RESTORING)
        self.transition_to(TaskState.RUNNING)

    def close(self, *, clean: bool) -> None:
        if self.state is TaskState.CLOSED:
            return  # closed already (as Kafka's close, a no-op)
        self.suspend()
        self.graph.punctuations.close()
        if self.state_manager is not None:
            self.state_manager.close(clean=clean)
        self.transition_to(TaskState.CLOSED)

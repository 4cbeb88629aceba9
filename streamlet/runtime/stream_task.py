"""StreamTask: an active task, i.e. one partition of one sub-topology running on this thread.

The task is also the processor context its nodes see (`get_state_store`, `send`, record metadata), so the
per-record path is direct attribute access with no extra indirection.
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from aiokafka.structs import ConsumerRecord, OffsetAndMetadata, TopicPartition

from streamlet.errors import DeserializationFailure
from streamlet.runtime.processor_graph import RecordDeserializationError, build_task_graph
from streamlet.runtime.record_collector import RecordCollector
from streamlet.runtime.record_context import RecordContext
from streamlet.state.state_manager import ProcessorStateManager
from streamlet.task_id import TaskId
from streamlet.topology import Topology

log = logging.getLogger("streamlet.task")


class TaskState(enum.Enum):
    CREATED = "CREATED"
    RESTORING = "RESTORING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    CLOSED = "CLOSED"


class DeserializationHandler:
    """What to do with a record its source serde cannot decode (Kafka Streams' handler config)."""

    def __init__(self, mode: str, collector: RecordCollector, dead_letter_topic: str = "") -> None:
        self.mode = mode
        self.collector = collector
        self.dead_letter_topic = dead_letter_topic
        self.skipped = 0  # metric: records dropped by log_and_continue or sent to the dead-letter topic

    def handle(self, task_id: TaskId, record: ConsumerRecord, exc: Exception) -> None:
        where = f"topic {record.topic} partition {record.partition} offset {record.offset}"
        if self.mode == "fail":
            raise DeserializationFailure(
                f"task {task_id}: cannot deserialize the record at {where}: {exc}. Processing stops "
                "(deserialization_exception_handler='fail'); use 'log_and_continue' or 'dead_letter' to skip it"
            ) from exc
        self.skipped += 1
        if self.mode == "dead_letter":
            log.warning(
                "task %s: record at %s cannot be deserialized (%s); sent to %s",
                task_id,
                where,
                exc,
                self.dead_letter_topic,
            )
            self.collector.send(self.dead_letter_topic, record.key, record.value, record.timestamp)
        else:
            log.warning("task %s: skipping record at %s that cannot be deserialized: %s", task_id, where, exc)


class StreamTask:
    """Active task: owns its source partitions, its processor graph and its stores."""

    def __init__(
        self,
        task_id: TaskId,
        partitions: frozenset[TopicPartition],
        topology: Topology,
        state_manager: ProcessorStateManager | None,
        stores: Mapping[str, Any],
        collector: RecordCollector,
        deserialization: DeserializationHandler,
        application_id: str,
    ) -> None:
        self.task_id = task_id
        self.application_id = application_id
        self.partitions = partitions
        self.state_manager = state_manager
        self._stores = dict(stores)
        self._collector = collector
        self._deserialization = deserialization
        self._consumed: dict[TopicPartition, int] = {}
        self._committed: dict[TopicPartition, int] = {}
        self.record_context = RecordContext()
        self.state = TaskState.CREATED
        self.graph = build_task_graph(topology, task_id, self, self.record_context)

    # ---- processor context -------------------------------------------------------------------------------

    def get_state_store(self, name: str) -> Any:
        try:
            return self._stores[name]
        except KeyError:
            raise KeyError(f"task {self.task_id} has no state store {name!r}; stores: {sorted(self._stores)}") from None

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int | None = None,
        partition: int | None = None,
    ) -> None:
        self._collector.send(topic, key, value, timestamp, partition)

    # ---- processing -----------------------------------------------------------------------------------------

    def process(self, tp: TopicPartition, records: Sequence[ConsumerRecord]) -> None:
        """Process one partition's batch in offset order."""
        process = self.graph.process
        for record in records:
            try:
                process(record.topic, record.partition, record.offset, record.timestamp, record.key, record.value)
            except RecordDeserializationError as exc:
                self._deserialization.handle(self.task_id, record, exc)
        if records:
            self._consumed[tp] = records[-1].offset

    def flush_caches(self) -> None:
        """Flush record caches: emits cached aggregates downstream and to the changelog."""
        if self.state_manager is not None:
            self.state_manager.flush_caches()

    def committable_offsets(self) -> dict[TopicPartition, OffsetAndMetadata]:
        out = {}
        for tp, offset in self._consumed.items():
            if self._committed.get(tp) != offset:
                out[tp] = OffsetAndMetadata(offset + 1, "")
        return out

    def mark_committed(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        for tp, meta in offsets.items():
            if tp in self.partitions:
                self._committed[tp] = meta.offset - 1

    def close(self, *, clean: bool) -> None:
        if self.state_manager is not None:
            self.state_manager.close(clean=clean)
        self.state = TaskState.CLOSED


class StandbyTask:
    """Standby (or warmup) task: keeps its stores open and follows their changelogs."""

    def __init__(self, task_id: TaskId, state_manager: ProcessorStateManager) -> None:
        self.task_id = task_id
        self.state_manager = state_manager
        self.state = TaskState.RUNNING

    def close(self, *, clean: bool) -> None:
        self.state_manager.close(clean=clean)
        self.state = TaskState.CLOSED

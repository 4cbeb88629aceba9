"""Task creation: opens a task's stores and builds its processor graph (Kafka Streams' Active/StandbyTaskCreator).

Every task of a stream thread shares the thread's `ThreadResources` (record cache, record collector,
handlers), handed over once, so a creator needs no reference back to the thread or the client. The
caller (the task manager) holds the task directory's lock before it asks for a task.
"""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiokafka.structs import TopicPartition

from streamlet.config import StreamsConfig
from streamlet.runtime.dropped_records import DroppedRecordsSensors
from streamlet.runtime.handlers import ThreadHandlers
from streamlet.runtime.local_tasks import LocalTasks
from streamlet.runtime.record_collector import RecordCollector
from streamlet.runtime.record_context import RecordContext
from streamlet.runtime.standby_task import StandbyTask
from streamlet.runtime.stream_task import StreamTask
from streamlet.runtime.topology_metadata import TopologyMetadata
from streamlet.state import time_ordered_buffer, timestamped
from streamlet.state.checkpoint import CHECKPOINT_FILE_NAME
from streamlet.state.record_cache import RecordCache
from streamlet.state.rocksdb_store import DB_FILE_DIR
from streamlet.state.state_directory import StateDirectory
from streamlet.state.state_manager import ProcessorStateManager
from streamlet.state.time_ordered_buffer import TimeOrderedKeyValueBuffer
from streamlet.task_id import TaskId
from streamlet.topology.nodes import StoreSpec
from streamlet.topology.session_windows import SessionWindows


@dataclass(frozen=True)
class ThreadResources:
    """What all tasks of one stream thread share."""

    cache: RecordCache
    collector: RecordCollector
    handlers: ThreadHandlers
    # each task's dropped-records sensor, kept across task moves (counts since the thread started)
    dropped: DroppedRecordsSensors = field(default_factory=DroppedRecordsSensors)


class TaskCreator:
    """Opens active and standby tasks for the threads of one client."""

    def __init__(
        self,
        metadata: TopologyMetadata,
        state_directory: StateDirectory,
        config: StreamsConfig,
        global_stores: Mapping[str, Any] | None = None,
    ) -> None:
        self._metadata = metadata
        self._state_directory = state_directory
        self._config = config
        self._global_stores = global_stores or {}  # the client's global stores, which every active task reads
        self.local_tasks = LocalTasks()  # every active task this client creates, for tables' items()

    def create_active(self, task_id: TaskId, resources: ThreadResources) -> StreamTask:
        """An active task: its stores cached and change-logged, RESTORING if it has any (else RUNNING).

        Raises StateStoreError with nothing left open if a store cannot be opened.
        """
        metadata = self._metadata
        record_context = RecordContext()
        state_manager = None
        unlogged = metadata.unlogged_buffers(task_id)
        if metadata.is_stateful(task_id) or unlogged:
            state_manager = self._state_manager(task_id)
            with _closed_on_error(state_manager):
                register_active_stores(
                    state_manager, metadata, task_id, resources.collector.send, record_context, resources.cache
                )
        return StreamTask(
            task_id,
            metadata.partitions_of(task_id),
            metadata.names,
            state_manager,
            resources.collector,
            resources.handlers,
            record_context,
            local_tasks=self.local_tasks,
            timestamp_extractor=self._config.extractor,
            global_stores=self._global_stores,
            max_task_idle_ms=self._config.max_task_idle_ms,
            dropped=resources.dropped.task(task_id),
        )

    def create_standby(self, task_id: TaskId) -> StandbyTask:
        """A standby: bare stores (no cache, no changelog writes), fed from the changelog only."""
        state_manager = self._state_manager(task_id)
        with _closed_on_error(state_manager):
            for store in self._metadata.changelog_partitions(task_id):
                spec = self._metadata.names.topology.stores[store]
                if spec.buffer:
                    state_manager.register_buffer(TimeOrderedKeyValueBuffer(store))
                else:
                    state_manager.register_store(store, **store_kind(spec))
        return StandbyTask(task_id, state_manager)

    def wipe_local_state(self, task_id: TaskId) -> None:
        """Delete the task's stores and checkpoint: the next open restores them from the changelog."""
        task_dir = self._state_directory.task_dir(task_id)
        shutil.rmtree(task_dir / DB_FILE_DIR, ignore_errors=True)
        (task_dir / CHECKPOINT_FILE_NAME).unlink(missing_ok=True)

    def _state_manager(self, task_id: TaskId) -> ProcessorStateManager:
        changelogs = self._metadata.changelog_partitions(task_id)
        return ProcessorStateManager(
            task_id,
            self._state_directory.task_dir(task_id),
            changelogs,
            restore_chunk_records=self._config.restore_chunk_records,
            source_changelogs=[tp for tp in changelogs.values() if self._metadata.is_source_changelog(tp)],
            transactional=self._config.exactly_once,
        )


def register_active_stores(
    state_manager: ProcessorStateManager,
    metadata: TopologyMetadata,
    task_id: TaskId,
    send: Callable[..., None],
    record_context: RecordContext,
    cache: RecordCache,
) -> None:
    """Register an active task's stores: each logged store change-logged through `send` (a suppression buffer
    writes its own changelog), cached if its spec asks, and the unlogged buffers in memory only.

    Workers (`TaskCreator.create_active`) and the `TopologyTestDriver` both open their stores here, so the
    semantics oracle, which runs on the driver, proves the registration workers run.
    """
    for store, tp in metadata.changelog_partitions(task_id).items():
        spec = metadata.names.topology.stores[store]
        if spec.buffer:
            buffer_sink = time_ordered_buffer.changelog_sink(send, tp.topic, tp.partition)
            state_manager.register_buffer(TimeOrderedKeyValueBuffer(store, buffer_sink))
            continue
        sink = None
        if not metadata.is_source_changelog(tp):  # a reused source topic is never written
            sink = changelog_sink(send, tp, record_context, spec.timestamped)
        state_manager.register_store(
            store, cache=cache if spec.cached else None, changelog_sink=sink, **store_kind(spec)
        )
    for store in metadata.unlogged_buffers(task_id):  # in memory, written nowhere: starts empty
        state_manager.register_buffer(TimeOrderedKeyValueBuffer(store))


def store_kind(spec: StoreSpec) -> dict[str, Any]:
    """`register_store` arguments for the kind of store a spec asks for (timestamped values, windows)."""
    retention = None if spec.windows is None else spec.windows.retention_ms
    sessions = isinstance(spec.windows, SessionWindows)
    return {
        "timestamped": spec.timestamped,
        "window_retention_ms": None if sessions else retention,
        "session_retention_ms": retention if sessions else None,
        "retain_duplicates": spec.retain_duplicates,
    }


@contextlib.contextmanager
def _closed_on_error(state_manager: ProcessorStateManager):  # noqa: ANN202
    try:
        yield
    except BaseException:
        with contextlib.suppress(Exception):
            state_manager.close(clean=False)
        raise


def changelog_sink(
    send: Callable[..., None], tp: TopicPartition, record_context: RecordContext, stamped: bool = False
) -> Callable[[bytes, bytes | None], None]:
    """Changelog records carry the timestamp of the record being processed when the store writes.

    A timestamped store's record carries the plain value with the stored timestamp instead (Kafka's
    `ChangeLoggingTimestampedKeyValueBytesStore`), so the changelog says when each aggregate was last updated;
    a delete that a table op registered in `record_context.delete_timestamps` carries that timestamp.
    """
    topic, partition = tp.topic, tp.partition
    if stamped:

        def stamped_sink(key: bytes, value: bytes | None) -> None:
            if value is None:
                timestamp = record_context.delete_timestamps.get((topic, key), record_context.timestamp)
                send(topic, key, None, timestamp, partition)
            else:
                send(topic, key, timestamped.value_of(value), timestamped.timestamp_of(value), partition)

        return stamped_sink

    def sink(key: bytes, value: bytes | None) -> None:
        send(topic, key, value, record_context.timestamp, partition)

    return sink

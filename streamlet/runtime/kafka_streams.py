"""KafkaStreams: one client (worker process) of a streamlet application, as in Kafka Streams.

It owns what is shared by its stream threads: the process id and state directory, the internal topics,
the changelog end offsets the group leader needs, the state cleaner, and the factories that open tasks
with their stores. Each thread owns its consumer, producer, record cache and tasks.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import shutil
import time
import uuid

from aiokafka import AIOKafkaConsumer
from aiokafka.structs import TopicPartition

from streamlet.assignment.api import AssignmentConfigs
from streamlet.assignment.client_state import end_offset_sum
from streamlet.assignment.registry import resolve_task_assignor
from streamlet.config import StreamsConfig
from streamlet.errors import StateStoreError, StreamletError
from streamlet.kafka.topics import InternalTopicManager, TopicSpec
from streamlet.runtime.restore_listener import CompositeRestoreListener, LoggingRestoreListener, StateRestoreListener
from streamlet.runtime.stream_task import StandbyTask, StreamTask, TaskState
from streamlet.runtime.stream_thread import StreamThread
from streamlet.runtime.topology_metadata import TopologyMetadata
from streamlet.state.state_directory import StateDirectory
from streamlet.state.state_manager import ProcessorStateManager
from streamlet.task_id import TaskId
from streamlet.topology import Topology

log = logging.getLogger("streamlet.client")


class State(enum.Enum):
    CREATED = "CREATED"
    RUNNING = "RUNNING"
    PENDING_SHUTDOWN = "PENDING_SHUTDOWN"
    NOT_RUNNING = "NOT_RUNNING"
    ERROR = "ERROR"


class KafkaStreams:
    """Runs a topology with `config.num_stream_threads` stream threads in this process."""

    def __init__(
        self, topology: Topology, config: StreamsConfig, *, restore_listener: StateRestoreListener | None = None
    ) -> None:
        self.topology = topology
        self.config = config
        self.topology_metadata = TopologyMetadata(topology, config.application_id)
        self.task_assignor = resolve_task_assignor(config.task_assignor)  # a bad name fails here, at start-up
        self.assignment_configs = AssignmentConfigs.from_streams_config(config)
        listeners: list[StateRestoreListener] = [LoggingRestoreListener()]
        if restore_listener is not None:
            listeners.append(restore_listener)
        self.restore_listener = CompositeRestoreListener(*listeners)
        self.state = State.CREATED
        self._state_directory: StateDirectory | None = None
        self.threads: list[StreamThread] = []
        self._changelog_partitions: list[TopicPartition] = []
        self._end_offsets: dict[TopicPartition, int] = {}
        self._end_offsets_lock = asyncio.Lock()
        self._offsets_consumer: AIOKafkaConsumer | None = None
        self._cleaner: asyncio.Task[None] | None = None

    # ---- lifecycle ----------------------------------------------------------------------------------------

    @property
    def state_directory(self) -> StateDirectory:
        if self._state_directory is None:
            raise StreamletError("the client is not started")
        return self._state_directory

    @property
    def process_id(self) -> uuid.UUID:
        return self.state_directory.process_id()

    async def start(self) -> None:
        if self.state is not State.CREATED:
            raise StreamletError(f"cannot start a client in state {self.state.value}")
        config = self.config
        self._state_directory = StateDirectory(
            config.state_dir, config.application_id, has_persistent_stores=bool(self.topology.stores)
        )
        try:
            await self._prepare_topics()
            self._offsets_consumer = AIOKafkaConsumer(
                bootstrap_servers=config.bootstrap_servers,
                group_id=None,
                client_id=f"{config.application_id}-{self.process_id}-admin",
            )
            await self._offsets_consumer.start()
            self.threads = [StreamThread(self, i + 1) for i in range(config.num_stream_threads)]
            for thread in self.threads:
                await thread.start()
        except BaseException:
            await self.close()
            raise
        self._cleaner = asyncio.create_task(self._state_cleaner(), name=f"{config.application_id}-state-cleaner")
        self.state = State.RUNNING
        log.info(
            "streamlet client %s started with %d stream threads (state dir %s)",
            self.process_id,
            len(self.threads),
            self.state_directory.app_dir,
        )

    async def _prepare_topics(self) -> None:
        manager = InternalTopicManager(self.config.bootstrap_servers, replication_factor=self.config.replication_factor)
        await manager.start()
        try:
            counts = await manager.require_source_topics(self.topology.external_source_topics())
            internal = self.topology.internal_topics(self.config.application_id, counts)
            await manager.ensure(TopicSpec(t.name, t.partitions or 1, t.config) for t in internal)
        finally:
            await manager.close()
        self._changelog_partitions = [
            TopicPartition(t.name, p) for t in internal if t.kind == "changelog" for p in range(t.partitions or 0)
        ]
        counts.update({t.name: t.partitions or 1 for t in internal if t.kind == "repartition"})
        self.topology_metadata.task_partitions(counts)  # caches task -> source partitions

    async def wait(self) -> None:
        """Return when every thread stopped; raise the first thread failure."""
        tasks = [t.done for t in self.threads if t.done is not None]
        if not tasks:
            return
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            if not task.cancelled() and task.exception() is not None:
                self.state = State.ERROR
                raise task.exception()  # type: ignore[misc]

    async def close(self) -> None:
        """Stop every thread (commit, flush, checkpoint, leave the group) and release the state directory."""
        if self.state in (State.NOT_RUNNING, State.PENDING_SHUTDOWN):
            return
        failed = self.state is State.ERROR
        self.state = State.PENDING_SHUTDOWN
        if self._cleaner is not None:
            self._cleaner.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._cleaner
        await asyncio.gather(*(t.stop() for t in self.threads), return_exceptions=True)
        if self._offsets_consumer is not None:
            await self._offsets_consumer.stop()
        if self._state_directory is not None:
            self._state_directory.close()
        self.state = State.ERROR if failed else State.NOT_RUNNING
        log.info("streamlet client stopped")

    def cleanup(self) -> None:
        """Delete this application's local state (like `KafkaStreams#cleanUp`); only while not running."""
        if self.state is State.RUNNING:
            raise StreamletError("cleanup() must be called before start() or after close()")
        directory = StateDirectory(self.config.state_dir, self.config.application_id)
        try:
            directory.cleanup()
        finally:
            directory.close()

    async def _state_cleaner(self) -> None:
        delay = self.config.state_cleanup_delay_ms
        interval = max(1.0, min(delay / 1000.0, 60.0))
        while True:
            await asyncio.sleep(interval)
            removed = self.state_directory.clean_removed_tasks(int(time.time() * 1000), delay)
            if removed:
                log.info("state cleaner removed task directories %s", [str(t) for t in removed])

    # ---- shared by threads --------------------------------------------------------------------------------

    async def refresh_changelog_end_offsets(self) -> None:
        """Fetched before every join, since the leader's synchronous `assign()` cannot do I/O."""
        if not self._changelog_partitions or self._offsets_consumer is None:
            return
        async with self._end_offsets_lock:
            ends = await self._offsets_consumer.end_offsets(self._changelog_partitions)
            self._end_offsets = dict(ends)

    def changelog_end_offset_sums(self, stateful_tasks: list[TaskId]) -> dict[TaskId, int]:
        meta = self.topology_metadata
        return {
            task: end_offset_sum(self._end_offsets.get(tp, 0) for tp in meta.changelog_partitions(task).values())
            for task in stateful_tasks
        }

    def release_unowned_task_dirs(self, owner: str, keep: set[TaskId]) -> None:
        """Unlock the task dirs `owner` holds outside `keep` (after an assignment, or all of them on shutdown)."""
        directory = self.state_directory
        for task in directory.locked_tasks(owner) - keep:
            directory.unlock_task(task, owner)

    def create_active_task(self, task_id: TaskId, thread: StreamThread) -> StreamTask | None:
        """Open an active task, or None while another thread of this client still holds its directory."""
        directory = self.state_directory
        if not directory.lock_task(task_id, thread.name):
            return None
        meta = self.topology_metadata
        holder: list[StreamTask] = []
        state_manager = None
        stores = {}
        if meta.is_stateful(task_id):
            state_manager = self._open_state(task_id, thread.name, thread, holder)
            stores = state_manager.stores()
        task = StreamTask(
            task_id,
            meta.partitions_of(task_id),
            self.topology,
            state_manager,
            stores,
            thread.collector,
            thread.deserialization,
            self.config.application_id,
        )
        holder.append(task)
        task.state = TaskState.RESTORING if state_manager is not None else TaskState.RUNNING
        return task

    def create_standby_task(self, task_id: TaskId, thread: StreamThread) -> StandbyTask | None:
        if not self.state_directory.lock_task(task_id, thread.name):
            return None
        return StandbyTask(task_id, self._open_state(task_id, thread.name, None, []))

    def _open_state(
        self, task_id: TaskId, owner: str, thread: StreamThread | None, holder: list[StreamTask]
    ) -> ProcessorStateManager:
        """The task's stores (caching + change-logging for an active task, bare for a standby).

        On failure the directory is unlocked and whatever opened is closed, so the caller can retry. A store
        RocksDB reports corrupt is wiped with its checkpoint first (the documented recovery): the retry then
        restores it from its changelog instead of failing again and again. `thread` is None for a standby.
        """
        state_manager = self._state_manager(task_id)
        try:
            for store, tp in self.topology_metadata.changelog_partitions(task_id).items():
                if thread is None:
                    state_manager.register_store(store)
                else:
                    sink = _changelog_sink(thread, tp, holder)
                    state_manager.register_store(store, cache=thread.cache, changelog_sink=sink)
            return state_manager
        except StateStoreError as exc:
            with contextlib.suppress(Exception):
                state_manager.close(clean=False)
            if "lock" not in str(exc).lower():
                task_dir = self.state_directory.task_dir(task_id)
                log.error(
                    "task %s: wiping its local state after an unreadable store (it restores from the changelog): %s",
                    task_id,
                    exc,
                )
                shutil.rmtree(task_dir / "rocksdb", ignore_errors=True)
                (task_dir / ".checkpoint").unlink(missing_ok=True)
            raise
        finally:
            if state_manager.closed:
                self.state_directory.unlock_task(task_id, owner)

    def _state_manager(self, task_id: TaskId) -> ProcessorStateManager:
        return ProcessorStateManager(
            task_id,
            self.state_directory.task_dir(task_id),
            self.topology_metadata.changelog_partitions(task_id),
            restore_chunk_records=self.config.restore_chunk_records,
        )


def _changelog_sink(thread: StreamThread, tp: TopicPartition, holder: list[StreamTask]):  # noqa: ANN202
    send = thread.collector.send
    topic, partition = tp.topic, tp.partition

    def sink(key: bytes, value: bytes | None) -> None:
        send(topic, key, value, holder[0].record_context.timestamp if holder else None, partition)

    return sink

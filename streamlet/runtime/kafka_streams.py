"""KafkaStreams: one client (worker process) of a streamlet application, as in Kafka Streams.

It owns what its stream threads share: the process id and state directory, the internal topics, the
changelog end offsets the group leader needs, the task creator and the state cleaner, and hands each
thread its share at construction. Threads never call back into the client.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import socket
import time
import uuid
from collections.abc import Awaitable, Mapping, Sequence
from typing import Any

from aiokafka.structs import TopicPartition

from streamlet.assignment.api import AssignmentConfigs
from streamlet.assignment.history import assignment_history_topic
from streamlet.assignment.registry import resolve_task_assignor
from streamlet.config import StreamsConfig
from streamlet.errors import MissingTopicError, StreamletError
from streamlet.kafka.acls import Acl, as_not_authorized, minimal_acls
from streamlet.kafka.topics import InternalTopicManager, TopicSpec
from streamlet.runtime.assignment_history import AssignmentHistoryWriter
from streamlet.runtime.changelog_end_offsets import ChangelogEndOffsets
from streamlet.runtime.clients import AioKafkaClientSupplier, KafkaClientSupplier, RestoreConsumer
from streamlet.runtime.commit_barrier import CommitBarrier
from streamlet.runtime.event_time_exchange import TOPIC_CONFIG as _EVENT_TIME_CONFIG
from streamlet.runtime.event_time_exchange import EventTimeExchange, event_time_topic
from streamlet.runtime.event_time_merge import MERGE_DISABLED
from streamlet.runtime.global_queries import GlobalReadOnlyKeyValueStore
from streamlet.runtime.global_stream_thread import GlobalStreamThread
from streamlet.runtime.metrics_event import metrics_topic
from streamlet.runtime.metrics_publisher import ClientMetrics, MetricsPublisher
from streamlet.runtime.queries import KeyQueryMetadata, ReadOnlyKeyValueStore, StreamsMetadata, StreamsMetadataState
from streamlet.runtime.restore_listener import CompositeRestoreListener, LoggingRestoreListener, StateRestoreListener
from streamlet.runtime.stream_thread import StreamThread
from streamlet.runtime.stream_time_watermark import StreamTimeWatermark
from streamlet.runtime.task_creator import TaskCreator
from streamlet.runtime.topology_metadata import TopologyMetadata
from streamlet.runtime.window_queries import ReadOnlySessionStore, ReadOnlyWindowStore, store_view
from streamlet.state import rocksdb_memory
from streamlet.state.state_directory import StateDirectory
from streamlet.topology import Topology

log = logging.getLogger("streamlet.client")

_HISTORY_CONFIG = {"cleanup.policy": "delete"}
# an event per client every few seconds: a day of them is plenty for `streamlet status` and experiments
_METRICS_CONFIG = {"cleanup.policy": "delete", "retention.ms": str(24 * 3600 * 1000)}


class State(enum.Enum):
    CREATED = "CREATED"
    RUNNING = "RUNNING"
    PENDING_SHUTDOWN = "PENDING_SHUTDOWN"
    NOT_RUNNING = "NOT_RUNNING"
    ERROR = "ERROR"


class KafkaStreams:
    """Runs a topology with `config.num_stream_threads` stream threads in this process."""

    def __init__(
        self,
        topology: Topology,
        config: StreamsConfig,
        *,
        restore_listener: StateRestoreListener | None = None,
        client_supplier: KafkaClientSupplier | None = None,
        owned_topics: Sequence[TopicSpec] = (),
        output_topics: Mapping[str, Sequence[str]] | None = None,
    ) -> None:
        self.topology = topology
        self.owned_topics = tuple(owned_topics)  # user-level topics the app creates (Faust GlobalTables')
        # user topics written outside the topology's sink nodes (an agent's sends), each with what writes it
        self.output_topics = {topic: list(writers) for topic, writers in (output_topics or {}).items()}
        self.config = config
        self.topology_metadata = TopologyMetadata(topology, config.application_id)
        self.task_assignor = resolve_task_assignor(config.task_assignor)  # a bad name fails here, at start-up
        self.assignment_configs = AssignmentConfigs.from_streams_config(config)
        # logs restorations and keeps their progress (the metrics, the worker's progress bar)
        self.restore_progress = LoggingRestoreListener()
        listeners: list[StateRestoreListener] = [self.restore_progress]
        if restore_listener is not None:
            listeners.append(restore_listener)
        self.restore_listener = CompositeRestoreListener(*listeners)
        self.state = State.CREATED
        self._state_directory: StateDirectory | None = None
        self.threads: list[StreamThread] = []
        self.client_supplier = client_supplier if client_supplier is not None else AioKafkaClientSupplier()
        self.end_offsets = ChangelogEndOffsets(self.topology_metadata)
        self._offsets_consumer: RestoreConsumer | None = None
        self._cleaner: asyncio.Task[None] | None = None
        self.assignment_history: AssignmentHistoryWriter | None = None
        self.metadata_state = StreamsMetadataState(self.topology_metadata, config.application_server)
        self._standby_end_offsets: dict[TopicPartition, int] = {}
        self.metrics: ClientMetrics | None = None  # once started (it names the process id)
        self._metrics_publisher: MetricsPublisher | None = None
        self._event_time_exchange: EventTimeExchange | None = None
        self.global_thread: GlobalStreamThread | None = None  # with global tables: restored before any task
        self._source_partition_counts: dict[str, int] = {}

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
        rocksdb_memory.configure(
            rocksdb_memory.RocksDBMemory(
                block_cache_bytes=config.rocksdb_block_cache_bytes,
                write_buffer_bytes=config.rocksdb_write_buffer_bytes,
                max_write_buffers=config.rocksdb_max_write_buffers,
                bounded_memory_bytes=config.rocksdb_bounded_memory_bytes,
            )
        )
        self._state_directory = StateDirectory(
            config.state_dir, config.application_id, has_persistent_stores=bool(self.topology.stores)
        )
        try:
            changelog_partitions = await self._prepare_topics()
            self._offsets_consumer = self.client_supplier.admin_consumer(
                config, f"{config.application_id}-{self.process_id}-admin"
            )
            await self._offsets_consumer.start()
            self.end_offsets.start(self._offsets_consumer, changelog_partitions)
            if config.assignment_history:
                self.assignment_history = AssignmentHistoryWriter(
                    assignment_history_topic(config.application_id),
                    config.application_id,
                    config.task_assignor,
                    lambda: self.client_supplier.producer(
                        config, f"{config.application_id}-{self.process_id}-assignment-history"
                    ),
                )
                await self.assignment_history.start()
            self.metrics = ClientMetrics(
                config.application_id,
                str(self.process_id),
                config.application_server or socket.gethostname(),
                config.metrics_interval_ms,
                lambda: self.threads,
                self.restore_progress,
                self.refresh_standby_lags,
            )
            global_stores = await self._start_global_thread()
            creator = TaskCreator(self.topology_metadata, self.state_directory, config, global_stores)
            watermark = StreamTimeWatermark()  # the threads advance event time together while catching up
            if self._shares_event_time():  # and the processes of the group
                exchange_id = f"{config.application_id}-{self.process_id}-event-time"
                self._event_time_exchange = EventTimeExchange(
                    watermark,
                    event_time_topic(config.application_id),
                    str(self.process_id),
                    config.event_time_exchange_interval_ms,
                    lambda: self.client_supplier.producer(config, exchange_id),
                    # a plain consumer without a group: it reads this one small topic
                    lambda: self.client_supplier.admin_consumer(config, exchange_id),
                )
                watermark.drift_ms = config.event_time_drift_ms
                await self._event_time_exchange.start()
            self.threads = [
                StreamThread(
                    i + 1,
                    config=config,
                    process_id=self.process_id,
                    metadata=self.topology_metadata,
                    state_directory=self.state_directory,
                    task_creator=creator,
                    end_offsets=self.end_offsets,
                    task_assignor=self.task_assignor,
                    assignment_configs=self.assignment_configs,
                    restore_listener=self.restore_listener,
                    clients=self.client_supplier,
                    assignment_history=self.assignment_history,
                    metadata_state=self.metadata_state,
                    watermark=watermark,
                )
                for i in range(config.num_stream_threads)
            ]
            for thread in self.threads:
                await thread.start()
            if config.metrics_interval_ms:
                self._metrics_publisher = MetricsPublisher(
                    self.metrics,
                    metrics_topic(config.application_id),
                    lambda: self.client_supplier.producer(config, f"{config.application_id}-{self.process_id}-metrics"),
                )
                await self._metrics_publisher.start()
        except BaseException as exc:
            await self.close()
            refused = as_not_authorized(exc, config.cluster, config.application_id)
            if refused is not None and refused is not exc:
                raise refused from exc
            raise
        self._cleaner = asyncio.create_task(self._state_cleaner(), name=f"{config.application_id}-state-cleaner")
        self.state = State.RUNNING
        log.info(
            "streamlet client %s started with %d stream threads (state dir %s)",
            self.process_id,
            len(self.threads),
            self.state_directory.app_dir,
        )

    def _shares_event_time(self) -> bool:
        """Whether the processes of the group share their event-time positions: only where threads merge."""
        config = self.config
        return (
            config.event_time_slice_ms != MERGE_DISABLED
            and config.event_time_exchange_interval_ms > 0
            and bool(self.topology_metadata.repartitioning_subtopologies())
        )

    async def _start_global_thread(self) -> dict[str, Any]:
        """Restore the global stores (and then keep them current) before any stream thread starts."""
        if not self.topology.global_stores:
            return {}
        config = self.config
        self.global_thread = GlobalStreamThread(
            self.topology,
            self.state_directory.app_dir,
            self.client_supplier.restore_consumer(config, f"{config.application_id}-{self.process_id}-global"),
            self._source_partition_counts,
            commit_interval_ms=config.commit_interval_ms,
            chunk_records=config.restore_chunk_records,
        )
        await self.global_thread.start()
        return self.global_thread.stores

    async def _prepare_topics(self) -> list[TopicPartition]:
        """Check the source topics, create the internal ones; returns every changelog partition."""
        manager = InternalTopicManager(
            self.config.cluster,
            replication_factor=self.config.replication_factor,
            topic_configs=self.config.topic_configs,
            application_id=self.config.application_id,
        )
        await manager.start()
        try:
            await manager.ensure(self.owned_topics)
            counts = await manager.require_source_topics(
                self.topology.external_source_topics() + self.topology.global_topics()
            )
            self._source_partition_counts = dict(counts)
            internal = self.topology_metadata.names.internal_topics(counts)  # checks co-partitioning first
            await self._require_sink_topics(manager)  # before any internal topic is created
            await manager.ensure(TopicSpec(t.name, t.partitions or 1, t.config) for t in internal)
            if self.config.assignment_history:
                # one partition keeps the history in order; time retention, never compaction (one key)
                history = TopicSpec(assignment_history_topic(self.config.application_id), 1, _HISTORY_CONFIG)
                await manager.ensure([history])
            if self.config.metrics_interval_ms:
                await manager.ensure([TopicSpec(metrics_topic(self.config.application_id), 1, _METRICS_CONFIG)])
            if self._shares_event_time():
                await manager.ensure([TopicSpec(event_time_topic(self.config.application_id), 1, _EVENT_TIME_CONFIG)])
        finally:
            await manager.close()
        counts.update({t.name: t.partitions or 1 for t in internal if t.kind == "repartition"})
        self.topology_metadata.task_partitions(counts)  # caches task -> source partitions
        changelogs = [
            TopicPartition(t.name, p) for t in internal if t.kind == "changelog" for p in range(t.partitions or 0)
        ]
        sourced = self.topology_metadata.names.source_changelog_topics()  # user topics reused as changelogs
        return changelogs + [TopicPartition(t, p) for t in sorted(sourced) for p in range(counts[t])]

    async def _require_sink_topics(self, manager: InternalTopicManager) -> None:
        """Fail at start-up, naming each missing topic and what writes it, if a topic the topology's sinks or
        the agents write does not exist: producing to it would only wait for metadata, record after record.
        Topics chosen per record (a processor's `context.send`) are checked by the record collector instead."""
        writers = self.topology.external_sink_topics()
        for topic, names in self.output_topics.items():
            writers.setdefault(topic, []).extend(names)
        existing = await manager.existing_topics(writers)
        missing = [
            f"{topic} (written by {', '.join(writers[topic])})" for topic in sorted(writers) if topic not in existing
        ]
        if missing:
            raise MissingTopicError(
                f"sink topic(s) do not exist: {'; '.join(missing)}. Create them first (e.g. `streamlet topics "
                "create NAME --partitions N`): streamlet creates only its internal topics"
            )

    def required_acls(self, principal: str) -> list[Acl]:
        """The minimal ACLs `principal` needs to run this application (streamlet.kafka.acls). Topics a processor
        picks per record (`context.send`) are not known here: add WRITE on each."""
        sinks = {*self.topology.external_sink_topics(), *self.output_topics}
        if self.config.dead_letter_topic:
            sinks.add(self.config.dead_letter_topic)
        return minimal_acls(
            principal,
            self.config.application_id,
            sources=self.topology.external_source_topics() + self.topology.global_topics(),
            sinks=sinks,
            exactly_once=self.config.exactly_once,
            owned=[spec.name for spec in self.owned_topics],
        )

    async def wait(self) -> None:
        """Return when every thread stopped; raise the first thread failure."""
        tasks = [t.done for t in self.threads if t.done is not None]
        if self.global_thread is not None and self.global_thread.done is not None:
            tasks.append(self.global_thread.done)
        if not tasks:
            return
        done, _ = await asyncio.wait(tasks, return_when=asyncio.FIRST_EXCEPTION)
        for task in done:
            failure = None if task.cancelled() else task.exception()
            if failure is not None:
                self.state = State.ERROR
                refused = as_not_authorized(failure, self.config.cluster, self.config.application_id)
                if refused is not None and refused is not failure:
                    raise refused from failure
                raise failure

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
        running = [t for t in self.threads if t.done is not None and not t.done.done()]
        barrier = CommitBarrier(len(running), self.config.session_timeout_ms / 1000)
        for thread in running:
            thread.commit_barrier = barrier
        await asyncio.gather(*(t.stop() for t in self.threads), return_exceptions=True)
        if self.global_thread is not None:  # after the threads, whose joins read its stores
            try:
                await _bounded("the global stream thread", self.global_thread.close())
            except Exception:
                log.exception("closing the global stream thread failed")
        if self._event_time_exchange is not None:  # after the threads: they no longer hold anybody back
            await _bounded("the event-time exchange", self._event_time_exchange.close())
            self._event_time_exchange = None
        if self._metrics_publisher is not None:  # after the threads: its last event holds their final counts
            await _bounded("the metrics publisher", self._metrics_publisher.close())
            self._metrics_publisher = None
        if self.assignment_history is not None:
            await _bounded("the assignment history", self.assignment_history.close())
        if self._offsets_consumer is not None:
            await _bounded("the admin consumer", self._offsets_consumer.stop())
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

    # ---- interactive queries (Kafka Streams IQ v1) -----------------------------------------------------------

    def store(self, name: str, *, max_standby_lag: int | None = None) -> ReadOnlyKeyValueStore:
        """A read-only view of store `name` over this client's active tasks (`KafkaStreams#store`).

        With `max_standby_lag` (KIP-535's stale stores), a key whose partition has a standby here, but no
        active task, is read from the standby if it is at most that many changelog records behind the end
        offsets last fetched by `refresh_standby_lags()` (never fetched: the standby does not answer).
        A global store is read from this client's own full copy (see `streamlet.runtime.global_queries`).
        A window store's view is a `ReadOnlyWindowStore` (read by key and time range), a session store's a
        `ReadOnlySessionStore` (see `streamlet.runtime.window_queries`).
        """
        if self.metadata_state.is_global(name):
            return GlobalReadOnlyKeyValueStore(
                name,
                self.metadata_state,
                lambda: self.state is State.RUNNING,
                lambda: None if self.global_thread is None else self.global_thread.stores.get(name),
            )
        return store_view(
            name,
            self.metadata_state,
            lambda: self.state is State.RUNNING,
            lambda: [t.task_manager for t in self.threads],
            max_standby_lag=max_standby_lag,
            standby_end_offset=self._standby_end_offsets.get,
        )

    def window_store(self, name: str, *, max_standby_lag: int | None = None) -> ReadOnlyWindowStore:
        """`store(name)` for a window store, typed (Kafka's `QueryableStoreTypes.windowStore()`)."""
        view = self.store(name, max_standby_lag=max_standby_lag)
        if not isinstance(view, ReadOnlyWindowStore):
            raise StreamletError(f"store {name!r} is not a window store ({type(view).__name__})")
        return view

    def session_store(self, name: str, *, max_standby_lag: int | None = None) -> ReadOnlySessionStore:
        """`store(name)` for a session store, typed (Kafka's `QueryableStoreTypes.sessionStore()`)."""
        view = self.store(name, max_standby_lag=max_standby_lag)
        if not isinstance(view, ReadOnlySessionStore):
            raise StreamletError(f"store {name!r} is not a session store ({type(view).__name__})")
        return view

    async def refresh_standby_lags(self) -> dict[TopicPartition, int]:
        """Fetch the end offsets of the local standbys' changelog partitions; returns each one's lag."""
        positions: dict[TopicPartition, int] = {}
        for thread in self.threads:
            for standby in thread.task_manager.standby.values():
                positions.update(standby.state_manager.changelog_offsets())
        if not positions:
            return {}
        ends = await self.end_offsets.log_end_offsets(sorted(positions))
        self._standby_end_offsets.update(ends)
        return {tp: max(0, ends.get(tp, 0) - position) for tp, position in positions.items()}

    def all_metadata(self) -> list[StreamsMetadata]:
        """Every client with an `application_server`, its stores and tasks (`metadataForAllStreamsClients`)."""
        return self.metadata_state.all_metadata()

    def metadata_for_store(self, name: str) -> list[StreamsMetadata]:
        """The clients running a task (active or standby) of store `name` (`streamsMetadataForStore`)."""
        return self.metadata_state.metadata_for_store(name)

    def query_metadata_for_key(self, store: str, key: Any) -> KeyQueryMetadata:
        """The host whose active task owns `key` in `store`, its standbys' hosts, and the partition.

        The key is serialized with the store's key serde and placed with Kafka's default partitioner (murmur2),
        as the producer of the store's input placed it (`queryMetadataForKey`).
        """
        key_serde, _ = self.metadata_state.store_serdes(store)
        raw = key_serde.serialize(store, key)
        if raw is None:
            raise KeyError(f"store {store}: None is not a valid key")
        return self.metadata_state.key_query_metadata(store, raw)

    async def _state_cleaner(self) -> None:
        delay = self.config.state_cleanup_delay_ms
        interval = max(1.0, min(delay / 1000.0, 60.0))
        while True:
            await asyncio.sleep(interval)
            removed = self.state_directory.clean_removed_tasks(int(time.time() * 1000), delay)
            if removed:
                log.info("state cleaner removed task directories %s", [str(t) for t in removed])


#: how long close() waits for each of the client's own producers and consumers once the threads have stopped
CLOSE_PART_TIMEOUT_S = 15.0


async def _bounded(what: str, closing: Awaitable[None]) -> None:
    """Await one part's close, abandoning it with a warning after CLOSE_PART_TIMEOUT_S: the threads have committed
    and left by then, so what is left to close must not keep the process from exiting (Kafka Streams' close takes a
    timeout for the same reason). A CI run saw a worker stop its thread cleanly and then never exit."""
    timeout = CLOSE_PART_TIMEOUT_S
    try:
        await asyncio.wait_for(closing, timeout)
    except TimeoutError:
        log.warning("closing %s took longer than %.0f s: abandoned, shutting down without it", what, timeout)

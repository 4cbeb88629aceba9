"""TopologyTestDriver: runs a topology in-process, without Kafka, the way Kafka Streams' driver does.

Why mirror Kafka's driver rather than just call the processors: its observable behaviour (which records come
out, in which order, with which timestamps) is what Kafka Streams users test against, and it is the oracle
streamlet's semantics are checked with. So it keeps Kafka's driver's shape:

* the whole topology is one task (here: one processor graph per sub-topology, all on partition 0, sharing one
  record context and one record cache), with real RocksDB stores in a temporary directory, cached and
  change-logged as in a running application;
* every piped record is queued on its source topic, then the task runs until its queues are empty: take
  the next record (the runtime's `PartitionGroup`: smallest head timestamp first), process it, **commit**
  (flush every store's cache, in topology order, so aggregates are emitted after each record), then capture
  what was produced: every record is kept as output of its topic, and a record to a topic the topology
  reads (a repartition topic, or a source topic written with `to()`) is queued again for processing;
* a record piped to a global table's topic updates its global store at once (Kafka's driver hands it to the
  global state task and flushes it); the global stores are read by every sub-topology's joins;
* after each record, stream-time punctuators that are due fire (the task's stream time: the largest timestamp
  processed); `advance_wall_clock_time` fires the wall-clock punctuators that are due, then commits and
  processes what is queued. The wall clock starts at `initial_wall_clock_time_ms` (0);
* a record user code fails on, while it is processed or when a cache flush forwards it, goes to the
  `processing_exception_handler` (`production_exception_handler` for a sink's) as in a worker (Kafka's driver
  runs the configured handlers too): the default, `fail`, raises the `RecordProcessingError` naming the node;
  the others skip the record, and `dead_letter` writes it to `dead_letter_topic`, an output topic here.
"""

from __future__ import annotations

import shutil
import tempfile
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

from aiokafka.structs import ConsumerRecord, TopicPartition

from streamlet.app import App
from streamlet.config import StreamsConfig
from streamlet.runtime.fetched_records import consumer_record
from streamlet.runtime.handlers import ThreadHandlers, flushed_record
from streamlet.runtime.partition_group import MAX_TASK_IDLE_MS_DISABLED, PartitionGroup
from streamlet.runtime.partitioner import DeferredPartition
from streamlet.runtime.processor_graph import TaskProcessorGraph, build_task_graph
from streamlet.runtime.punctuation import TaskPunctuations
from streamlet.runtime.record_context import RecordContext
from streamlet.runtime.task_context import RecordProcessingError
from streamlet.runtime.task_creator import register_active_stores
from streamlet.runtime.topology_metadata import TopologyMetadata
from streamlet.serdes import SerdeLike
from streamlet.state.caching_store import CachingKeyValueStore
from streamlet.state.global_state_manager import GLOBAL_DIR_NAME
from streamlet.state.record_cache import RecordCache
from streamlet.state.rocksdb_store import DB_FILE_DIR, RocksDBStore
from streamlet.state.state_manager import ProcessorStateManager
from streamlet.state.store import KeyValueStore
from streamlet.state.time_ordered_buffer import TimeOrderedKeyValueBuffer
from streamlet.task_id import TaskId
from streamlet.testing.stores import (
    KeyValueStoreView,
    SessionStoreView,
    TimestampedKeyValueStoreView,
    WindowStoreView,
)
from streamlet.testing.topics import TestInputTopic, TestOutputTopic
from streamlet.topology import StreamsBuilder, Topology
from streamlet.topology.session_windows import SessionWindows
from streamlet.topology.sliding_windows import SlidingWindows
from streamlet.topology.windows import TimeWindows

#: The application id when the config gives none (Kafka's driver makes up a random one).
DEFAULT_APPLICATION_ID = "topology-test-driver"
_PARTITION = 0

#: A produced record: (topic, key, value, timestamp); a suppression buffer's changelog records have no timestamp.
Produced = tuple[str, bytes | None, bytes | None, int | None]


class _GlobalRecord(NamedTuple):
    """A record piped to a global table's topic, as its store's restore path takes it."""

    key: bytes | None
    value: bytes | None
    timestamp: int
    offset: int = -1  # the driver keeps no offsets for global topics


class _Piped(NamedTuple):
    """A record piped to (or written back to) a source topic, queued as the runtime queues fetched ones."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()
    timestamp_type: int = 0  # CreateTime


class _TaskContext:
    """What the processor graphs of the driver's task see: its stores, and a producer that only records."""

    def __init__(
        self, task_id: TaskId, stores: Mapping[str, KeyValueStore], produced: list[Produced], record: RecordContext
    ) -> None:
        self.task_id = task_id
        self._stores = stores
        self._produced = produced
        self._record = record

    @property
    def timestamp(self) -> int:
        """The timestamp of the record being processed (agents' sends carry it)."""
        return self._record.timestamp

    def get_state_store(self, name: str) -> Any:
        return self._stores[name]

    def send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int | None,
        partition: int | DeferredPartition | None = None,
        headers: Any = None,
    ) -> None:
        self._produced.append((topic, key, value, timestamp))


class TopologyTestDriver:
    """Drive a `Topology` (or `StreamsBuilder`, or `App`) record by record; see the module docstring.

    `config` holds StreamsConfig settings, over an App's own (`application_id` defaults to the App's, else
    `topology-test-driver`); only `application_id`, `statestore_cache_max_bytes`, `timestamp_extractor` and the
    processing and production exception handlers (with `dead_letter_topic`) matter here.
    """

    def __init__(
        self,
        topology_or_app: Topology | StreamsBuilder | App,
        config: StreamsConfig | Mapping[str, Any] | None = None,
        *,
        initial_wall_clock_time_ms: int = 0,
    ) -> None:
        if isinstance(topology_or_app, App):
            topology = topology_or_app.topology()
            if not isinstance(config, StreamsConfig):  # the App's settings, then the ones given here
                config = topology_or_app.config(**(config or {}))
        elif isinstance(topology_or_app, StreamsBuilder):
            topology = topology_or_app.build()
        else:
            topology = topology_or_app
        if not isinstance(config, StreamsConfig):
            config = StreamsConfig.from_mapping({"application_id": DEFAULT_APPLICATION_ID, **(config or {})})
        self.config = config
        self.topology = topology
        self._metadata = TopologyMetadata(topology, config.application_id)
        self.names = self._metadata.names
        self.wall_clock_time_ms = initial_wall_clock_time_ms
        self._state_dir = Path(tempfile.mkdtemp(prefix="streamlet-ttd-"))
        self._cache = RecordCache(config.statestore_cache_max_bytes)
        self._record = RecordContext()
        self._punctuations = TaskPunctuations(self._record, lambda: self.wall_clock_time_ms)
        self._produced: list[Produced] = []
        self._handlers = ThreadHandlers(
            self,
            processing=config.processing_exception_handler,
            production=config.production_exception_handler,
            dead_letter_topic=config.dead_letter_topic,
        )
        self._outputs: dict[str, deque[tuple[bytes | None, bytes | None, int | None]]] = {}
        self._graphs: dict[str, TaskProcessorGraph] = {}  # source topic -> the graph that reads it
        self._state_managers: list[ProcessorStateManager] = []
        self._stores: dict[str, KeyValueStore] = {}
        self._global_stores: dict[str, RocksDBStore] = {}  # global topic -> its store
        self._closed = False
        try:
            global_dir = self._state_dir / self.config.application_id / GLOBAL_DIR_NAME / DB_FILE_DIR
            for global_store in topology.global_stores:
                store = RocksDBStore(global_store.store, global_dir / global_store.store)
                self._global_stores[global_store.topic] = store
                self._stores[global_store.store] = store
            for sub in topology.subtopologies:
                self._open_subtopology(TaskId(sub.id, _PARTITION))
        except BaseException:
            self.close()
            raise
        # the runtime's PartitionGroup, as Kafka's driver uses its StreamTask's: the semantics oracle then proves
        # the order workers take records in (heads stamped by the extractor, ties as Java's heap breaks them)
        stampers = {topic: stamp for graph in set(self._graphs.values()) for topic, stamp in graph.stampers.items()}
        sources = [TopicPartition(topic, _PARTITION) for topic in self._graphs]
        self._queues = PartitionGroup(sources, MAX_TASK_IDLE_MS_DISABLED, stampers)
        self._next_offsets = dict.fromkeys(self._graphs, 0)

    def _open_subtopology(self, task_id: TaskId) -> None:
        names = self.names
        # one task per sub-topology, its stores opened as a worker's active task opens them
        changelogs = self._metadata.changelog_partitions(task_id)
        state = ProcessorStateManager(task_id, self._state_dir / self.config.application_id / str(task_id), changelogs)
        self._state_managers.append(state)
        register_active_stores(state, self._metadata, task_id, self._send, self._record, self._cache)
        stores = state.stores()
        self._stores.update(stores)
        readable = {**{store.name: store for store in self._global_stores.values()}, **stores}
        context = _TaskContext(task_id, readable, self._produced, self._record)
        # as Kafka's driver, outer stream-stream joins look for closed windows on every record (no throttle)
        graph = build_task_graph(
            names, task_id, context, self._record, self.config.extractor, self._punctuations, join_emit_interval_ms=0
        )
        graph.on_flush_error = lambda exc: self._record_failed(graph, flushed_record(self._record), exc)
        for topic in graph.source_topics:
            self._graphs[topic] = graph

    def _record_failed(
        self, graph: TaskProcessorGraph, record: ConsumerRecord[Any, Any], exc: RecordProcessingError
    ) -> None:
        """The worker's handling (`ThreadHandlers.record_failed`), except that `fail` raises the error itself."""
        handler = self._handlers.production if exc.production else self._handlers.processing
        if handler.mode == "fail":
            raise exc
        self._handlers.record_failed(graph.task_id, record, exc, graph.dropped)

    def send_dead_letter(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int | None,
        headers: Sequence[tuple[str, bytes]],
    ) -> None:
        """The handlers' dead letters: records of the dead-letter topic's output (without their headers)."""
        self._produced.append((topic, key, value, timestamp))

    def _send(
        self,
        topic: str,
        key: bytes | None,
        value: bytes | None,
        timestamp: int | None,
        partition: int | DeferredPartition | None = None,
        headers: Any = None,
    ) -> None:
        self._produced.append((topic, key, value, timestamp))

    # ---- topics ------------------------------------------------------------------------------------------

    def create_input_topic(
        self,
        topic: str,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        *,
        start_timestamp_ms: int = 0,
        auto_advance_ms: int = 0,
    ) -> TestInputTopic:
        """A topic to pipe records into; it must be a source topic of the topology (or a global table's)."""
        if topic not in self._graphs and topic not in self._global_stores:
            readable = sorted([*self._graphs, *self._global_stores])
            raise ValueError(f"Unknown topic: {topic} (the topology reads {readable})")
        return TestInputTopic(self, topic, key_serde, value_serde, start_timestamp_ms, auto_advance_ms)

    def create_output_topic(
        self, topic: str, key_serde: SerdeLike = None, value_serde: SerdeLike = None
    ) -> TestOutputTopic:
        """A topic to read what the topology wrote (any topic: sinks, repartition and changelog topics)."""
        return TestOutputTopic(self, topic, key_serde, value_serde)

    def pipe_raw(self, topic: str, key: bytes | None, value: bytes | None, timestamp: int) -> None:
        """Queue one serialized record on a source topic and process all the work it causes."""
        self._check_open()
        global_store = self._global_stores.get(topic)
        if global_store is not None:  # Kafka's processGlobalRecord: the global store takes it, nothing runs
            global_store.apply_changelog_records([_GlobalRecord(key, value, timestamp)], timestamped=True)
            return
        if topic not in self._graphs:
            raise ValueError(f"Unknown topic: {topic}")
        self._enqueue(topic, timestamp, key, value)
        self._complete_all_processable_work()

    def _enqueue(self, topic: str, timestamp: int, key: bytes | None, value: bytes | None) -> None:
        offset = self._next_offsets[topic]
        self._next_offsets[topic] = offset + 1
        self._queues.add_records(TopicPartition(topic, _PARTITION), [_Piped(offset, timestamp, key, value)])

    def read_raw(self, topic: str) -> tuple[bytes | None, bytes | None, int | None]:
        queue = self._outputs.get(topic)
        if not queue:
            raise LookupError(f"Empty topic: {topic}")
        return queue.popleft()

    def queue_size(self, topic: str) -> int:
        return len(self._outputs.get(topic, ()))

    def produced_topics(self) -> list[str]:
        """Topics something was written to, in the order of their first record."""
        return list(self._outputs)

    # ---- time and stores -----------------------------------------------------------------------------------

    def advance_wall_clock_time(self, ms: int) -> None:
        """Move the mocked wall clock, fire the wall-clock punctuators due, commit, and process what is queued."""
        self._check_open()
        if ms < 0:
            raise ValueError(f"advance must be >= 0, got {ms}")
        self.wall_clock_time_ms += ms
        self._punctuations.punctuate_wall_clock_time()
        self._commit()
        self._complete_all_processable_work()

    def get_key_value_store(self, name: str) -> KeyValueStoreView:
        """A store by name, values deserialized (plain values, also for timestamped stores)."""
        spec = self.topology.stores.get(name)
        if spec is not None and spec.windows is not None:
            raise TypeError(f"store {name!r} is a window store: use get_window_store()")
        return KeyValueStoreView(self._store(name), self.topology.stores[name], self.names.serde_topic(name))

    def get_window_store(self, name: str) -> WindowStoreView:
        """A windowed aggregation's store by name: values per key and window start."""
        spec = self.topology.stores.get(name)
        if spec is not None and not isinstance(spec.windows, TimeWindows | SlidingWindows):
            raise TypeError(f"store {name!r} is not a window store of an aggregation")
        return WindowStoreView(self._store(name), self.topology.stores[name], self.names.serde_topic(name))

    def get_session_store(self, name: str) -> SessionStoreView:
        """A session-windowed aggregation's store by name: `find_sessions` and `fetch_session`."""
        spec = self.topology.stores.get(name)
        if spec is not None and not isinstance(spec.windows, SessionWindows):
            raise TypeError(f"store {name!r} is not a session store")
        return SessionStoreView(self._store(name), self.topology.stores[name], self.names.serde_topic(name))

    def dropped_records(self) -> int:
        """Records the processors skipped (null keys or values, late records for closed windows, negative
        extracted timestamps): Kafka's task-level dropped-records metric. A method, as every other read of the
        driver (`queue_size()`, `produced_topics()`, `get_key_value_store()`) and Kafka's `metrics()`."""
        return sum(graph.dropped_records for graph in set(self._graphs.values()))

    def dropped_records_by_processor(self) -> dict[str, int]:
        """The same per processor node: what each one dropped (late records, null keys, ...), as a running
        worker reports it in its metrics."""
        out: dict[str, int] = {}
        for graph in set(self._graphs.values()):
            for node, count in graph.dropped.by_processor().items():
                out[node] = out.get(node, 0) + count
        return out

    def get_timestamped_key_value_store(self, name: str) -> TimestampedKeyValueStoreView:
        """A timestamped store by name, values as `(value, timestamp)`."""
        if not self.topology.stores[name].timestamped:
            raise TypeError(f"store {name!r} is not a timestamped store")
        return TimestampedKeyValueStoreView(self._store(name), self.topology.stores[name], self.names.serde_topic(name))

    def _store(self, name: str) -> KeyValueStore:
        try:
            return self._stores[name]
        except KeyError:
            raise KeyError(f"no store {name!r}; stores: {sorted(self._stores)}") from None

    # ---- the loop (Kafka's completeAllProcessableWork) -----------------------------------------------------

    def _complete_all_processable_work(self) -> None:
        self._capture_outputs()
        queues = self._queues
        while (taken := queues.next_record()) is not None:
            queue, record = taken
            topic = queue.partition.topic
            graph = self._graphs[topic]
            try:
                graph.process(topic, _PARTITION, record.offset, record.timestamp, record.key, record.value)
            except RecordProcessingError as exc:
                self._record_failed(graph, consumer_record(queue.partition, record), exc)
            self._punctuations.punctuate_stream_time(self.stream_time)
            self._commit()
            self._capture_outputs()

    @property
    def stream_time(self) -> int:
        """The task's stream time: the largest timestamp processed so far (-1 before any record)."""
        return max((graph.stream_time for graph in self._graphs.values()), default=-1)

    def _commit(self) -> None:
        """Flush buffering nodes (a pre-aggregation's partials), then every store's cache and log every
        suppression buffer, in the order the topology declares them, then the buffers again (Kafka's
        flushCache, then flush)."""
        for graph in dict.fromkeys(self._graphs.values()):
            graph.flush()
        buffers: list[TimeOrderedKeyValueBuffer] = []
        for name in self.topology.stores:
            store = self._stores.get(name)
            if isinstance(store, CachingKeyValueStore):
                store.flush_cache()
            elif isinstance(store, TimeOrderedKeyValueBuffer):
                store.flush_buffer()
                buffers.append(store)
        for buffer in buffers:
            buffer.flush_buffer()

    def _capture_outputs(self) -> None:
        produced = list(self._produced)
        self._produced.clear()  # the task context appends to this very list
        for topic, key, value, timestamp in produced:
            self._outputs.setdefault(topic, deque()).append((key, value, timestamp))
            global_store = self._global_stores.get(topic)
            if global_store is not None:  # written to a global topic: the global store reads it (Kafka's driver)
                record = _GlobalRecord(key, value, -1 if timestamp is None else timestamp)
                global_store.apply_changelog_records([record], timestamped=True)
            elif topic in self._graphs:
                self._enqueue(topic, -1 if timestamp is None else timestamp, key, value)

    # ---- lifecycle -------------------------------------------------------------------------------------------

    def close(self) -> None:
        """Close the stores and delete the state directory."""
        if self._closed:
            return
        self._closed = True
        try:
            for state in self._state_managers:
                state.close(clean=False)
            for store in self._global_stores.values():
                store.close()
        finally:
            shutil.rmtree(self._state_dir, ignore_errors=True)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("the TopologyTestDriver is closed")

    def __enter__(self) -> TopologyTestDriver:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

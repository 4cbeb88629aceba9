"""The executable processor graph of one task (Kafka Streams' `ProcessorTopology` + processor nodes).

`build_task_graph(names, task_id, context)` compiles the nodes of the task's sub-topology into plain
closures, each calling its children's directly (depth-first, children in topology order, as Kafka
Streams forwards), so the per-record path is function calls only: no per-record lookups by node name
and no allocations beyond the user functions' own results.

The runtime supplies the `TopicNames` of the application, the `TaskContext` (task id, state stores, record
sending), and the
graph writes the current record's metadata into the task's one `RecordContext`, which nodes read.

Aggregations (count/reduce/aggregate) follow Kafka Streams' caching semantics: they only update their
store; the store calls the flush listener they registered when its record cache flushes or evicts an
entry (or on every put when caching is off), and the listener forwards `(key, new value)` downstream
(e.g. KTABLE-TOSTREAM -> sink). Records with a null key or null value are dropped by aggregations, and
null keys are dropped before a repartition topic, as in Kafka Streams.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from types import TracebackType
from typing import Any, cast

from streamlet.errors import SerializationError, StreamsFailure, TopologyError
from streamlet.runtime import branch_processors, global_table_join, ktable_processors, stream_join, value_getters
from streamlet.runtime.dropped_records import INVALID_TIMESTAMP, DroppedRecords
from streamlet.runtime.pre_aggregate import pre_aggregate_node
from streamlet.runtime.processor_context import ProcessorContext
from streamlet.runtime.punctuation import TaskPunctuations
from streamlet.runtime.record_collector import RecordTooLargeError
from streamlet.runtime.record_context import RecordContext
from streamlet.runtime.session_aggregation import session_aggregation
from streamlet.runtime.sliding_aggregation import sliding_aggregation
from streamlet.runtime.suppress_processor import build_suppress
from streamlet.runtime.task_context import (
    InvalidTimestampError,
    RecordDeserializationError,
    RecordProcessingError,
    Stamper,
    TaskContext,
)
from streamlet.runtime.topic_names import TopicNames
from streamlet.session_windows import SessionWindows
from streamlet.sliding_windows import SlidingWindows
from streamlet.state import timestamped, window_key_schema
from streamlet.state.time_ordered_buffer import TimeOrderedKeyValueBuffer
from streamlet.task_id import TaskId
from streamlet.timestamps import UNKNOWN, ConsumedRecord, TimestampExtractor
from streamlet.topology import nodes as n
from streamlet.topology.nodes import ProcessorSpec, SinkSpec, SourceSpec
from streamlet.windows import TimeWindow, TimeWindows, Windowed

__all__ = ["TaskProcessorGraph", "build_task_graph"]

Forward = Callable[[Any, Any], None]


def failing_node(tb: TracebackType | None) -> str | None:
    """The innermost processor node on a traceback: the one whose own code (or user function) raised.

    Every node closure carries its name as the default of its `_node` parameter, which costs nothing per
    record; only this error path looks at it.
    """
    node = None
    while tb is not None:
        code = tb.tb_frame.f_code
        if code.co_filename == __file__ and "_node" in code.co_varnames:
            name = tb.tb_frame.f_locals.get("_node")
            if isinstance(name, str):
                node = name
        tb = tb.tb_next
    return node


def _noop(key: Any, value: Any) -> None:
    return None


def _forward_stored(
    forward: Forward,
    record: Any,
    key: Any,
    stored: bytes | None,
    value_de: Callable[[str, bytes], Any],
    topic: str,
    old: bytes | None = None,
) -> None:
    """Forward a flushed timestamped-store entry with the timestamp it was stored with (None = a delete).

    `old` (the plain value it replaced) travels as `record.old_value` for the processors that keep it."""
    record.old_value = old
    try:
        if stored is None:
            forward(key, None)
            return
        current = record.timestamp
        record.timestamp = timestamped.timestamp_of(stored)
        try:
            forward(key, value_de(topic, timestamped.value_of(stored)))
        finally:
            record.timestamp = current
    finally:
        record.old_value = None


class TaskProcessorGraph:
    """One task's processors. Call `process()` once per input record, in offset order per partition."""

    __slots__ = (
        "task_id",
        "application_id",
        "subtopology",
        "source_topics",
        "store_names",
        "record",
        "_sinks",
        "dropped",
        "_sources",
        "_nodes",
        "_flushers",
        "stream_time",
        "partition_times",
        "stampers",
        "punctuations",
        "join_trackers",
        "join_emit_interval_ms",
    )

    def __init__(
        self,
        task_id: TaskId,
        application_id: str,
        subtopology: int,
        record: RecordContext,
        punctuations: TaskPunctuations | None = None,
        join_emit_interval_ms: int = stream_join.EMIT_INTERVAL_MS,
        dropped: DroppedRecords | None = None,
    ) -> None:
        self.task_id = task_id
        self.application_id = application_id
        self.subtopology = subtopology
        self.source_topics: tuple[str, ...] = ()
        self.store_names: tuple[str, ...] = ()
        self.record = record
        self._sinks: frozenset[str] = frozenset()
        # what the processors skipped (late records, null keys, ...): Kafka's dropped-records sensor of the task
        self.dropped = dropped if dropped is not None else DroppedRecords(task_id)
        self._sources: dict[str, Callable[[bytes | None, bytes | None], None]] = {}
        self._nodes: tuple[str, ...] = ()
        self._flushers: list[Callable[[], None]] = []
        self.stream_time = -1  # the largest timestamp processed (Kafka's stream time; -1: unknown)
        # per source topic, per partition: the largest timestamp processed there (Kafka's partition time)
        self.partition_times: dict[str, dict[int, int]] = {}
        # per source topic with a timestamp extractor: the timestamp its source will give a record, before it
        # is processed (what a task with several input partitions orders its queued records by)
        self.stampers: dict[str, Stamper] = {}
        # the task's punctuators (shared by the graphs of a TopologyTestDriver, which is one task)
        self.punctuations = punctuations if punctuations is not None else TaskPunctuations(record)
        self.join_trackers: dict[str, stream_join.TimeTracker] = {}  # per stream-stream join: its stream time
        # how often (wall-clock ms) a left/outer stream-stream join scans for unmatched records whose window closed
        self.join_emit_interval_ms = join_emit_interval_ms

    @property
    def nodes(self) -> tuple[str, ...]:
        return self._nodes

    @property
    def dropped_records(self) -> int:
        """Records the processors skipped so far (Kafka's `dropped-records-total` of the task)."""
        return self.dropped.total

    def partition_time(self, topic: str, partition: int) -> int:
        """The largest timestamp processed on one input partition (-1: none yet): what a commit records."""
        return self.partition_times.get(topic, {}).get(partition, UNKNOWN)

    def set_partition_time(self, topic: str, partition: int, partition_time: int) -> None:
        """Resume a partition at its committed time (Kafka's `PartitionGroup#setPartitionTime`): stream time
        becomes at least that time."""
        self.partition_times.setdefault(topic, {})[partition] = partition_time
        if partition_time > self.stream_time:
            self.stream_time = partition_time

    def add_flusher(self, flush: Callable[[], None]) -> None:
        """Register a node's buffer flush (a pre-aggregation's partials), run by `flush()`."""
        self._flushers.append(flush)

    def flush(self) -> None:
        """Forward what nodes buffer; the task calls it before it commits, ahead of its stores' caches."""
        for flush in self._flushers:
            flush()

    def process(
        self,
        topic: str,
        partition: int,
        offset: int,
        timestamp: int,
        key: bytes | None,
        value: bytes | None,
    ) -> None:
        """Deserialize one record with its source's serdes and run it through the graph."""
        record = self.record
        record.topic = topic
        record.partition = partition
        record.offset = offset
        record.timestamp = timestamp
        source = self._sources.get(topic)
        if source is None:
            raise TopologyError(
                f"task {self.task_id} does not read topic {topic!r} (its source topics: {list(self._sources)})"
            )
        try:
            source(key, value)
        except (RecordDeserializationError, StreamsFailure, TopologyError):  # fatal: the app itself is wrong
            raise
        except Exception as exc:
            node = failing_node(exc.__traceback__)
            production = isinstance(exc, RecordTooLargeError) or node in self._sinks
            raise RecordProcessingError(
                f"task {self.task_id}: processor {node} raised {exc!r} on record {topic}-{partition}@{offset}",
                node,
                exc,
                production=production,
            ) from exc

    def __repr__(self) -> str:
        return f"TaskProcessorGraph({self.task_id}, nodes={len(self._nodes)})"


def _fanout(children: list[Forward]) -> Forward:
    if not children:
        return _noop
    if len(children) == 1:
        return children[0]
    targets = tuple(children)

    def forward(key: Any, value: Any) -> None:
        for child in targets:
            child(key, value)

    return forward


def build_task_graph(
    names: TopicNames,
    task_id: TaskId,
    context: TaskContext,
    record: RecordContext | None = None,
    timestamp_extractor: TimestampExtractor | None = None,
    punctuations: TaskPunctuations | None = None,
    join_emit_interval_ms: int = stream_join.EMIT_INTERVAL_MS,
    dropped: DroppedRecords | None = None,
) -> TaskProcessorGraph:
    """Compile the sub-topology of `task_id` into a `TaskProcessorGraph` bound to `context`.

    `record` is the task's record context (a fresh one when the graph runs on its own, as in tests).
    `timestamp_extractor` replaces the timestamp of each record read from a user topic (see
    `streamlet.timestamps`); records of repartition topics keep theirs. `punctuations` are the task's
    punctuation queues, when several graphs make one task (the TopologyTestDriver); by default its own.
    `dropped` is the task's dropped-records sensor, which its thread keeps across task moves; by default a new one.
    """
    topology = names.topology
    sub = topology.subtopology(task_id.subtopology)
    record = record if record is not None else RecordContext()
    graph = TaskProcessorGraph(
        task_id, names.application_id, sub.id, record, punctuations, join_emit_interval_ms, dropped
    )
    specs = [topology.node(name) for name in sub.nodes]
    children: dict[str, list[str]] = {spec.name: [] for spec in specs}
    for spec in specs:
        for predecessor in spec.predecessors:
            children[predecessor].append(spec.name)  # addChild order = topology order

    compiled: dict[str, Forward] = {}
    sources: dict[str, Callable[[bytes | None, bytes | None], None]] = {}
    graph.punctuations.hold()  # user processors schedule as they are created, children first
    for spec in reversed(specs):  # children before parents
        forward = _fanout([compiled[child] for child in children[spec.name]])
        if isinstance(spec, SourceSpec):
            for raw in spec.topics:
                topic = names.topic(raw)
                # repartition topics keep the timestamps written into them (Kafka's repartition sources
                # use FailOnInvalidTimestamp whatever the configured extractor)
                extractor = None if topology.is_internal_topic(raw) else timestamp_extractor
                sources[topic] = _source(spec, topic, forward, graph, extractor)
        elif isinstance(spec, SinkSpec):
            compiled[spec.name] = _sink(spec, names.topic(spec.topic), context, graph)
        elif isinstance(spec, ProcessorSpec) and spec.op == n.BRANCH:  # forwards to one child, by name
            compiled[spec.name] = branch_processors.split(spec, {c: compiled[c] for c in children[spec.name]})
        else:
            assert isinstance(spec, ProcessorSpec)
            compiled[spec.name] = _processor(spec, forward, names, context, graph)

    graph.punctuations.release(sub.nodes)
    graph._sources = sources
    graph._sinks = frozenset(spec.name for spec in specs if isinstance(spec, SinkSpec))
    graph._nodes = tuple(spec.name for spec in specs)
    graph.source_topics = tuple(sources)
    graph.store_names = sub.store_names
    return graph


def _source(
    spec: SourceSpec, topic: str, forward: Forward, graph: TaskProcessorGraph, extractor: TimestampExtractor | None
) -> Callable[[bytes | None, bytes | None], None]:
    key_de = spec.key_serde.deserialize
    value_de = spec.value_serde.deserialize
    record = graph.record
    partition_times = graph.partition_times.setdefault(topic, {})  # per partition of this topic

    def source(key: bytes | None, value: bytes | None, _node: str = spec.name) -> None:
        try:
            k = key_de(topic, key)
            v = value_de(topic, value)
        except Exception as exc:
            raise RecordDeserializationError(
                f"cannot deserialize record {record.where()} at source {spec.name} (task {graph.task_id}): {exc}",
                topic,
                record.partition,
                record.offset,
                spec.name,
            ) from exc
        partition = record.partition
        partition_time = partition_times.get(partition, UNKNOWN)
        if extractor is None:
            timestamp = record.timestamp
            if timestamp < 0:
                raise InvalidTimestampError(
                    f"record {record.where()} has invalid (negative) timestamp {timestamp}; the producer "
                    "gave it none: set a timestamp_extractor (Kafka's FailOnInvalidTimestamp)",
                    topic,
                    partition,
                    record.offset,
                    spec.name,
                )
        else:
            consumed = ConsumedRecord(topic, partition, record.offset, record.timestamp, k, v)
            timestamp = extractor(consumed, partition_time)
            if timestamp < 0:  # Kafka's RecordQueue skips it, with a warning and a metric
                graph.dropped.skipped(
                    _node,
                    INVALID_TIMESTAMP,
                    "Skipping record due to negative extracted timestamp. processor=[%s] task=[%s] topic=[%s] "
                    "partition=[%d] offset=[%d] extractedTimestamp=[%d]",
                    _node,
                    graph.task_id,
                    topic,
                    partition,
                    record.offset,
                    timestamp,
                )
                return
            record.timestamp = timestamp
        if timestamp > partition_time:
            partition_times[partition] = timestamp
        if timestamp > graph.stream_time:
            graph.stream_time = timestamp
        forward(k, v)

    if extractor is not None:

        def stamp(partition: int, offset: int, timestamp: int, key: bytes | None, value: bytes | None) -> int:
            """The timestamp `source` will extract, at the partition time it will have (Kafka's RecordQueue
            extracts the head record's timestamp before the task chooses it)."""
            try:
                consumed = ConsumedRecord(
                    topic, partition, offset, timestamp, key_de(topic, key), value_de(topic, value)
                )
                return extractor(consumed, partition_times.get(partition, UNKNOWN))
            except Exception:  # the source meets the same error when it processes the record, and reports it
                return timestamp

        graph.stampers[topic] = stamp
    return source


def _sink(spec: SinkSpec, topic: str, context: TaskContext, graph: TaskProcessorGraph) -> Forward:
    key_ser = spec.key_serde.serialize
    value_ser = spec.value_serde.serialize
    send = context.send
    record = graph.record

    partitioner = spec.partitioner
    if partitioner is not None:

        def partitioned_sink(key: Any, value: Any, _node: str = spec.name) -> None:
            def partition(num_partitions: int) -> int | None:
                return partitioner(topic, key, value, num_partitions)

            send(topic, key_ser(topic, key), value_ser(topic, value), record.timestamp, partition)

        return partitioned_sink

    def sink(key: Any, value: Any, _node: str = spec.name) -> None:
        send(topic, key_ser(topic, key), value_ser(topic, value), record.timestamp)

    return sink


def _processor(
    spec: ProcessorSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: TaskProcessorGraph
) -> Forward:
    op = spec.op
    fn: Any = spec.fn
    if op == n.FILTER:

        def filter_(key: Any, value: Any, _node: str = spec.name) -> None:
            if fn(key, value):
                forward(key, value)

        return filter_
    if op == n.FILTER_NOT:

        def filter_not(key: Any, value: Any, _node: str = spec.name) -> None:
            if not fn(key, value):
                forward(key, value)

        return filter_not
    if op == n.MAP_VALUES:

        def map_values(key: Any, value: Any, _node: str = spec.name) -> None:
            forward(key, fn(value))

        return map_values
    if op == n.FLAT_MAP_VALUES:

        def flat_map_values(key: Any, value: Any, _node: str = spec.name) -> None:
            for item in fn(value):
                forward(key, item)

        return flat_map_values
    if op == n.MAP:

        def map_(key: Any, value: Any, _node: str = spec.name) -> None:
            new_key, new_value = fn(key, value)
            forward(new_key, new_value)

        return map_
    if op == n.FLAT_MAP:

        def flat_map(key: Any, value: Any, _node: str = spec.name) -> None:
            for new_key, new_value in fn(key, value):
                forward(new_key, new_value)

        return flat_map
    if op == n.SELECT_KEY:

        def select_key(key: Any, value: Any, _node: str = spec.name) -> None:
            forward(fn(key, value), value)

        return select_key
    if op == n.PEEK:

        def peek(key: Any, value: Any, _node: str = spec.name) -> None:
            fn(key, value)
            forward(key, value)

        return peek
    if op == n.FOREACH:

        def foreach(key: Any, value: Any, _node: str = spec.name) -> None:
            fn(key, value)

        return foreach
    if op == n.REPARTITION_FILTER:

        def repartition_filter(key: Any, value: Any, _node: str = spec.name) -> None:
            if key is not None:
                forward(key, value)

        return repartition_filter
    if op == n.PROCESS:
        processor_context = ProcessorContext(spec.name, context, graph.record, graph.punctuations, forward, graph)
        processor = fn(processor_context)  # one processor instance per task
        if not callable(processor):
            raise TopologyError(f"processor factory of node {spec.name} returned {processor!r}, not a callable")

        def process(key: Any, value: Any, _node: str = spec.name) -> None:
            processor(key, value)

        return process
    if op == n.TO_STREAM or op == n.PASS_THROUGH:
        return forward  # pass-through (an aggregation table's listener already forwards (key, new value))
    if op == n.PREAGGREGATE:
        return pre_aggregate_node(spec, forward, graph)
    if op == n.SUPPRESS:
        assert spec.suppress is not None
        (store_name,) = spec.stores
        buffer = context.get_state_store(store_name)
        if not isinstance(buffer, TimeOrderedKeyValueBuffer):
            raise TopologyError(f"suppress node {spec.name}: store {store_name} is not a suppression buffer")
        store_spec = names.topology.stores[store_name]
        topic = value_getters.buffer_topic(names, store_name)
        return build_suppress(spec.name, spec.suppress, buffer, store_spec, topic, graph.record, forward)
    if op in n.AGGREGATING_OPS:
        if isinstance(spec.windows, SessionWindows | SlidingWindows):
            return _other_window_aggregation(spec, forward, names, context, graph)
        if spec.windows is not None:
            return _window_aggregation(spec, forward, names, context, graph)
        return _aggregation(spec, forward, names, context, graph)
    if op in n.TABLE_OPS:
        return ktable_processors.build(spec, forward, names, context, graph)
    if op in n.GLOBAL_TABLE_JOIN_OPS:
        return global_table_join.build(spec, forward, names, context, graph)
    if op in n.STREAM_JOIN_OPS:
        return stream_join.build(spec, forward, names, context, graph)
    raise TopologyError(f"unknown processor operation {op!r} in node {spec.name}")


_INT64 = struct.Struct(">q")


def _old_values(store: Any) -> tuple[bool, list[bytes | None]]:
    """Whether `store` emits each write at once (no cache), and a cell for the aggregate a write replaces.

    Without a cache Kafka forwards an update straight from the aggregation, whose old value is the aggregate
    it started from: the initializer's for a new key, where a cached store's flush reports none (nothing was
    stored). The aggregation puts it in the cell just before its write; the listener, called within the
    write, forwards it (to a suppression buffer, which logs it)."""
    return bool(getattr(store, "passthrough", False)), [None]


def _other_window_aggregation(
    spec: ProcessorSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: TaskProcessorGraph
) -> Forward:
    """Session and sliding-window aggregations (in their own modules), as a node of this graph."""
    build = session_aggregation if isinstance(spec.windows, SessionWindows) else sliding_aggregation
    store = context.get_state_store(spec.stores[0])
    aggregate = build(spec, None if forward is _noop else forward, names, store, graph)

    def windowed_aggregate(key: Any, value: Any, _node: str = spec.name) -> None:
        aggregate(key, value)

    return windowed_aggregate


def _aggregation(
    spec: ProcessorSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: TaskProcessorGraph
) -> Forward:
    """count/reduce/aggregate on a timestamped store (`KStreamAggregate`, `KStreamReduce` in Kafka 4.x).

    The aggregate's timestamp is the record's for a new key, else the larger of the record's and the stored
    aggregate's; downstream updates carry it (the store's flush listener reads it back from the value).
    """
    (store_name,) = spec.stores
    store_spec = names.topology.stores[store_name]
    store = context.get_state_store(store_name)
    topic = names.changelog_topic(store_name)  # the topic store serdes are called with
    # aggregations skip null keys, and a non-null key always serializes to bytes
    key_ser = cast(Callable[[str, Any], bytes], store_spec.key_serde.serialize)
    key_de = store_spec.key_serde.deserialize
    value_ser = store_spec.value_serde.serialize
    value_de = store_spec.value_serde.deserialize
    get = store.get
    put = store.put
    record = graph.record
    value_of = timestamped.value_of
    timestamp_of = timestamped.timestamp_of

    def encode(timestamp: int, serialized: bytes | None) -> bytes | None:
        # a null aggregate is a delete, as `ValueAndTimestamp.make(null, ts)` is null
        return None if serialized is None else timestamped.encode(timestamp, serialized)

    direct, replaced = _old_values(store)

    # Always listen, even without downstream nodes: as in Kafka (whose aggregations always install a flush
    # listener), a flushed delete of a key the store never had is then neither written nor logged.
    def on_flush(
        key: bytes, new_value: bytes | None, old_value: bytes | None = None, timestamp: int | None = None
    ) -> None:
        if forward is _noop:
            return
        k = key_de(topic, key)
        old = replaced[0] if direct else None if old_value is None else value_of(old_value)
        _forward_stored(forward, record, k, new_value, value_de, topic, old)

    store.set_flush_listener(on_flush)

    op = spec.op
    if op == n.COUNT:
        pack = _INT64.pack
        unpack = _INT64.unpack
        zero = pack(0)  # count's initial aggregate

        def count(key: Any, value: Any, _node: str = spec.name) -> None:
            if key is None or value is None:
                graph.dropped.null_key_or_value(_node, record)
                return
            store_key = key_ser(topic, key)
            old = get(store_key)
            if direct:
                replaced[0] = zero if old is None else value_of(old)
            if old is None:
                put(store_key, encode(record.timestamp, pack(1)))
                return
            try:
                total = unpack(value_of(old))[0] + 1
            except struct.error as exc:
                raise SerializationError(
                    f"store {store_name} holds a {len(old) - timestamped.TIMESTAMP_SIZE}-byte count for a key; "
                    "Size of data received by LongDeserializer is not 8"
                ) from exc
            put(store_key, encode(max(record.timestamp, timestamp_of(old)), pack(total)))

        return count

    fn: Any = spec.fn
    if op == n.REDUCE:

        def reduce(key: Any, value: Any, _node: str = spec.name) -> None:
            if key is None or value is None:
                graph.dropped.null_key_or_value(_node, record)
                return
            store_key = key_ser(topic, key)
            old = get(store_key)
            if direct:
                replaced[0] = None if old is None else value_of(old)
            if old is None:
                put(store_key, encode(record.timestamp, value_ser(topic, value)))
                return
            new = fn(value_de(topic, value_of(old)), value)
            put(store_key, encode(max(record.timestamp, timestamp_of(old)), value_ser(topic, new)))

        return reduce

    initializer: Any = spec.initializer

    def aggregate(key: Any, value: Any, _node: str = spec.name) -> None:
        if key is None or value is None:
            graph.dropped.null_key_or_value(_node, record)
            return
        store_key = key_ser(topic, key)
        old = get(store_key)
        if old is None:
            current, timestamp = initializer(), record.timestamp
        else:
            current, timestamp = value_de(topic, value_of(old)), max(record.timestamp, timestamp_of(old))
        if direct:
            replaced[0] = value_ser(topic, current) if old is None else value_of(old)
        put(store_key, encode(timestamp, value_ser(topic, fn(key, value, current))))

    return aggregate


def _window_aggregation(
    spec: ProcessorSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: TaskProcessorGraph
) -> Forward:
    """count/reduce/aggregate per key and time window (`KStreamWindowAggregate`, emitting on every update).

    Stream time here is the largest timestamp this processor has seen; a window closes once stream time
    reaches its end plus the grace period, and a record for a closed window is dropped (counted and logged by
    `graph.dropped`, Kafka's dropped-records sensor), once per closed window it falls in, as Kafka counts it.
    Only null keys are skipped: a null value still counts, as in Kafka. Each window's aggregate sits in the
    window store under the WindowKeySchema key, with its timestamp (the record's for a new window, else the
    larger of the record's and the stored one).
    """
    windows = spec.windows
    assert isinstance(windows, TimeWindows)
    (store_name,) = spec.stores
    store_spec = names.topology.stores[store_name]
    store = context.get_state_store(store_name)
    topic = names.changelog_topic(store_name)
    key_ser = cast(Callable[[str, Any], bytes], store_spec.key_serde.serialize)
    key_de = store_spec.key_serde.deserialize
    value_ser = store_spec.value_serde.serialize
    value_de = store_spec.value_serde.deserialize
    get = store.get
    put = store.put
    record = graph.record
    value_of = timestamped.value_of
    timestamp_of = timestamped.timestamp_of
    size, grace = windows.size_ms, windows.grace_ms
    observed = [-1]  # this processor's stream time (Kafka's observedStreamTime), in a cell for the closure

    direct, replaced = _old_values(store)

    # Always listen, even without downstream nodes: as in Kafka (whose aggregations always install a flush
    # listener), a flushed delete of a key the store never had is then neither written nor logged.
    def on_flush(
        key: bytes, new_value: bytes | None, old_value: bytes | None = None, timestamp: int | None = None
    ) -> None:
        if forward is _noop:  # listening anyway: see _aggregation
            return
        start = window_key_schema.window_start_of(key)
        k = Windowed(key_de(topic, window_key_schema.key_of(key)), TimeWindow(start, start + size))
        old = replaced[0] if direct else None if old_value is None else value_of(old_value)
        _forward_stored(forward, record, k, new_value, value_de, topic, old)

    store.set_flush_listener(on_flush)

    op = spec.op
    fn: Any = spec.fn
    initializer: Any = spec.initializer
    if op == n.COUNT:
        pack, unpack = _INT64.pack, _INT64.unpack

        def initial() -> Any:
            return 0

        def update(key: Any, value: Any, aggregate: Any) -> Any:
            return aggregate + 1

        encode_value: Callable[[Any], bytes | None] = pack
        decode_value: Callable[[bytes], Any] = lambda raw: unpack(raw)[0]  # noqa: E731
    else:
        if op == n.REDUCE:

            def initial() -> Any:
                return None

            def update(key: Any, value: Any, aggregate: Any) -> Any:
                return value if aggregate is None else fn(aggregate, value)

        else:
            initial = initializer
            update = fn
        encode_value = lambda obj: value_ser(topic, obj)  # noqa: E731
        decode_value = lambda raw: value_de(topic, raw)  # noqa: E731

    def window_aggregate(key: Any, value: Any, _node: str = spec.name) -> None:
        if key is None:
            graph.dropped.null_key_or_value(_node, record)
            return
        timestamp = record.timestamp
        if timestamp > observed[0]:
            observed[0] = timestamp
        close_time = observed[0] - grace
        key_bytes = key_ser(topic, key)
        for window in windows.windows_for(timestamp):
            if window.end <= close_time:  # late: the window closed
                graph.dropped.late(_node, record, window.start, window.end, close_time, observed[0])
                continue
            store_key = window_key_schema.to_store_key(key_bytes, window.start)
            old = get(store_key)
            if old is None:
                aggregate, new_timestamp = initial(), timestamp
            else:
                aggregate, new_timestamp = decode_value(value_of(old)), max(timestamp, timestamp_of(old))
            if direct:  # Kafka forwards the aggregate it started from (the initial one for a new window)
                replaced[0] = (
                    value_of(old) if old is not None else None if aggregate is None else encode_value(aggregate)
                )
            new = encode_value(update(key, value, aggregate))
            put(store_key, None if new is None else timestamped.encode(new_timestamp, new))

    return window_aggregate

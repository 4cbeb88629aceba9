"""The executable processor graph of one task (Kafka Streams' `ProcessorTopology` + processor nodes).

`build_task_graph(names, task_id, context)` compiles the nodes of the task's sub-topology into plain
closures, each calling its children's directly (depth-first, children in topology order, as Kafka
Streams forwards), so the per-record path is function calls only: no per-record lookups by node name
and no allocations beyond the user functions' own results.

The runtime supplies the `TopicNames` of the application, the `TaskContext` (task id, state stores, record
sending), and the graph writes the current record's metadata into the task's one `RecordContext`, which nodes
read.

This module only wires: sources and sinks, and each processor as the builder of its spec's type makes it
(`processor_builders`: the stateless stream ones in `stream_processors`, aggregations in `stream_aggregation`,
table nodes in `ktable_processors`, joins in their modules).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlet.errors import StreamsFailure, TopologyError
from streamlet.runtime import branch_processors, stream_join
from streamlet.runtime.dropped_records import INVALID_TIMESTAMP, DroppedRecords
from streamlet.runtime.failing_node import failing_node, raised_in
from streamlet.runtime.forwarding import Forward, fanout
from streamlet.runtime.processor_builders import build_processor
from streamlet.runtime.punctuation import TaskPunctuations
from streamlet.runtime.record_collector import RecordTooLargeError
from streamlet.runtime.record_context import RecordContext
from streamlet.runtime.task_context import (
    InvalidTimestampError,
    RecordDeserializationError,
    RecordProcessingError,
    Stamper,
    TaskContext,
)
from streamlet.runtime.topic_names import TopicNames
from streamlet.state.caching_store import CachingKeyValueStore
from streamlet.task_id import TaskId
from streamlet.topology.nodes import BranchSpec, ProcessorSpec, SinkSpec, SourceSpec
from streamlet.topology.timestamps import UNKNOWN, ConsumedRecord, TimestampExtractor

__all__ = ["TaskProcessorGraph", "build_task_graph"]


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
        "on_flush_error",
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
        # what the task does with a record that failed below a flush (`forward_failed`): its processing
        # exception handler in a worker; by default (the TopologyTestDriver) the error is raised, as `process`'s
        self.on_flush_error: Callable[[RecordProcessingError], None] = _raise

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
        except _PASSED_ON:
            raise
        except Exception as exc:
            failure = self._failure(exc, f"on record {topic}-{partition}@{offset}")
            failure.__cause__ = exc  # mypyc ignores `raise ... from exc`
            raise failure  # noqa: B904 (its cause is set)

    def forward_failed(self, exc: Exception) -> None:
        """A node raised on a record that a flush forwarded (a store's cache, a pre-aggregation's partials):
        name the node and hand the error to `on_flush_error`, as `process` raises it for an input record.

        Kafka Streams' `ProcessorNode#process` catches every node's error, flushed records' too, and gives it
        to the processing exception handler; if that skips the record, the flush goes on."""
        if isinstance(exc, _PASSED_ON):  # named already (a flush within a flush), or fatal
            raise exc
        error = self._failure(exc, f"on a record flushed downstream (the task was at {self.record.where()})")
        error.__cause__ = exc
        self.on_flush_error(error)

    def _failure(self, exc: Exception, which: str) -> RecordProcessingError:
        node = failing_node(exc)
        production = isinstance(exc, RecordTooLargeError) or node in self._sinks
        return RecordProcessingError(
            f"task {self.task_id}: processor {node} raised {exc!r} {which}", node, exc, production=production
        )

    def __repr__(self) -> str:
        return f"TaskProcessorGraph({self.task_id}, nodes={len(self._nodes)})"


#: errors `process` and `forward_failed` pass on as they are: the app itself is wrong (fatal), or a node is named
_PASSED_ON = (RecordDeserializationError, RecordProcessingError, StreamsFailure, TopologyError)


def _raise(error: RecordProcessingError) -> None:
    raise error


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
    `streamlet.topology.timestamps`); records of repartition topics keep theirs. `punctuations` are the task's
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
        forward = fanout([compiled[child] for child in children[spec.name]])
        if isinstance(spec, SourceSpec):
            for raw in spec.topics:
                topic = names.topic(raw)
                # repartition topics keep the timestamps written into them (Kafka's repartition sources
                # use FailOnInvalidTimestamp whatever the configured extractor)
                extractor = None if topology.is_internal_topic(raw) else timestamp_extractor
                sources[topic] = _source(spec, topic, forward, graph, extractor)
        elif isinstance(spec, SinkSpec):
            compiled[spec.name] = _sink(spec, names.topic(spec.topic), context, graph)
        elif isinstance(spec, BranchSpec):  # forwards to one child, by name
            compiled[spec.name] = branch_processors.split(spec, {c: compiled[c] for c in children[spec.name]})
        else:
            assert isinstance(spec, ProcessorSpec)
            compiled[spec.name] = build_processor(spec, forward, names, context, graph)

    graph.punctuations.release(sub.nodes)
    # what a store's cache flushes goes through the graph's error path; a store without a cache forwards while
    # its writer processes an input record, whose error `process` hands on with that record
    for name in sub.store_names:
        store = context.get_state_store(name)
        if isinstance(store, CachingKeyValueStore) and not store.passthrough:
            store.set_forward_error_handler(graph.forward_failed)
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
    # the user's extractor may return anything: checked below, not by mypyc's cast of a declared `int`
    extract: Callable[[ConsumedRecord, int], object] | None = extractor

    def source(key: bytes | None, value: bytes | None, _node: str = spec.name) -> None:
        try:
            try:
                k = key_de(topic, key)
                v = value_de(topic, value)
            except Exception as exc:
                undecodable = RecordDeserializationError(
                    f"cannot deserialize record {record.where()} at source {spec.name} (task {graph.task_id}): {exc}",
                    topic,
                    record.partition,
                    record.offset,
                    spec.name,
                )
                undecodable.__cause__ = exc  # mypyc ignores `raise ... from exc`
                raise undecodable  # noqa: B904 (its cause is set)
            partition = record.partition
            partition_time = partition_times.get(partition, UNKNOWN)
            if extract is None:
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
                extracted = extract(consumed, partition_time)
                if not isinstance(extracted, int) or isinstance(extracted, bool):
                    raise TypeError(
                        f"the timestamp extractor returned {extracted!r} for record {record.where()}, not an int (ms)"
                    )
                timestamp = extracted
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
        except Exception as exc:
            raised_in(exc, _node)
            raise

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

    # the user's partitioner may return anything: the record collector checks it, not mypyc's cast of `int | None`
    partitioner: Callable[[str, Any, Any, int], object] | None = spec.partitioner
    if partitioner is not None:

        def partitioned_sink(key: Any, value: Any, _node: str = spec.name) -> None:
            try:

                def partition(num_partitions: int) -> Any:
                    return partitioner(topic, key, value, num_partitions)

                send(topic, key_ser(topic, key), value_ser(topic, value), record.timestamp, partition)
            except Exception as exc:
                raised_in(exc, _node)
                raise

        return partitioned_sink

    def sink(key: Any, value: Any, _node: str = spec.name) -> None:
        try:
            send(topic, key_ser(topic, key), value_ser(topic, value), record.timestamp)
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return sink

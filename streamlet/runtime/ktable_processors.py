"""Processors of source KTables, KTable operations and KStream-KTable joins (Kafka Streams' `KTableSource`,
`KTableFilter`, `KTableMapValues`, `KTable#toStream` and `KStreamKTableJoin`), and the builders of the other
table nodes: grouped-table aggregations (`table_aggregation`), table-table joins (`table_table_join`) and
foreign-key joins (`foreign_key_join`), which share the table nodes' materialization and their input below an
aggregation or a suppression.

Table nodes forward `Change(new, old)` values, as Kafka's do: `new` None is a delete, and `old` is the
previous value only where the downstream asked for old values (`send_old_values`), else None.

A materialized source writes the timestamped store and forwards from the store's flush listener, so with the
record cache it emits one update per key per flush (old = what the store held before), and without it one per
record. A non-materialized filter without old values forwards a delete for every row it filters out, since it
cannot tell whether the key was there; with old values it drops a change whose old and new are both filtered.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from streamlet.runtime import foreign_key_join
from streamlet.runtime.dropped_records import DroppedRecords
from streamlet.runtime.failing_node import raised_in
from streamlet.runtime.forwarding import Forward
from streamlet.runtime.record_context import RecordContext
from streamlet.runtime.store_access import store_access
from streamlet.runtime.table_aggregation import table_aggregation, table_select
from streamlet.runtime.table_table_join import join_merger, table_table_join
from streamlet.runtime.topic_names import TopicNames
from streamlet.runtime.value_getters import TaskContext, buffer_topic, timestamped_value_getter, value_getter
from streamlet.state import timestamped
from streamlet.task_id import TaskId
from streamlet.topology import nodes as n
from streamlet.topology.change import Change
from streamlet.topology.nodes import (
    AggregateSpec,
    ForeignKeyJoinNodeSpec,
    StreamTableJoinSpec,
    SuppressSpec,
    TableAggregateSpec,
    TableJoinSpec,
    TableNodeSpec,
    TableOperationSpec,
)

#: deletes a table source remembers the timestamps of until its cache flushes them
MAX_PENDING_DELETES = 10_000


class TaskProcessorGraph(Protocol):
    """What they need of `processor_graph.TaskProcessorGraph`: its task, the record context and the drop count."""

    task_id: TaskId
    record: RecordContext
    dropped: DroppedRecords


S = TypeVar("S", bound=TableNodeSpec)
Builder = Callable[[S, Forward, TopicNames, TaskContext, TaskProcessorGraph], Forward]


def _taking_changes(build: Builder[S]) -> Builder[S]:
    """The builder of a node that takes table updates: below an aggregation or a suppression (which forward
    plain values, with the one they replaced in the record context) its input is made a `Change(new, old)`."""

    def built(spec: S, forward: Forward, names: TopicNames, context: TaskContext, graph: TaskProcessorGraph) -> Forward:
        processor = build(spec, forward, names, context, graph)
        parent = names.topology.node(spec.predecessors[0]) if spec.predecessors else None
        if isinstance(parent, AggregateSpec | TableAggregateSpec):
            return _changes_of_aggregation(spec, parent, processor, names, graph)
        if isinstance(parent, SuppressSpec):
            return _changes_of_suppression(spec, parent, processor, names, graph)
        return processor

    return built


def _changes_of_aggregation(
    spec: TableNodeSpec,
    parent: AggregateSpec | TableAggregateSpec,
    processor: Forward,
    names: TopicNames,
    graph: TaskProcessorGraph,
) -> Forward:
    """A table op below an aggregation gets its updates as `Change(new, old)`: the old value is the aggregate
    it replaced (plain bytes of the aggregation's store) if the aggregation sends old values, as Kafka's
    aggregations do once a downstream table asks (`enableSendingOldValues`)."""
    if not parent.send_old_values:

        def change_of(key: Any, value: Any, _node: str = spec.name) -> None:
            try:
                processor(key, Change(value, None))
            except Exception as exc:
                raised_in(exc, _node)
                raise

        return change_of
    (store_name,) = parent.stores
    value_de = names.topology.stores[store_name].value_serde.deserialize
    return _with_old_value(spec.name, processor, value_de, names.changelog_topic(store_name), graph)


def _changes_of_suppression(
    spec: TableNodeSpec, parent: SuppressSpec, processor: Forward, names: TopicNames, graph: TaskProcessorGraph
) -> Forward:
    """A table op below a suppression gets its updates as `Change(new, old)`: the old value is the one buffered
    with the update (plain bytes in the buffer's value serde), which the buffer always has (Kafka's suppression
    makes its parent send old values)."""
    (buffer,) = parent.stores
    value_de = names.topology.stores[buffer].value_serde.deserialize
    return _with_old_value(spec.name, processor, value_de, buffer_topic(names, buffer), graph)


def _with_old_value(
    node: str, processor: Forward, value_de: Callable[[str, bytes], Any], topic: str, graph: TaskProcessorGraph
) -> Forward:
    """The node that hands `processor` each update as `Change(new, old)`, the old value being the record's
    `old_value` bytes (set by the parent that forwards) read with `value_de`."""
    record = graph.record

    def change_with_old_of(key: Any, value: Any, _node: str = node) -> None:
        try:
            old = record.old_value
            processor(key, Change(value, None if old is None else value_de(topic, old)))
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return change_with_old_of


def _table_operation(
    spec: TableOperationSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: TaskProcessorGraph
) -> Forward:
    """A table source, filter, mapValues, toStream, or the re-grouping map of `KTable.group_by`."""
    op = spec.op
    if op == n.TABLE_SOURCE:
        return _table_source(spec, forward, names, context, graph)
    if op == n.TABLE_TO_STREAM:

        def table_to_stream(key: Any, change: Change, _node: str = spec.name) -> None:
            try:
                forward(key, change.new)
            except Exception as exc:
                raised_in(exc, _node)
                raise

        return table_to_stream
    if op == n.TABLE_SELECT:
        return table_select(spec, forward)
    write = _materialized(spec, forward, names, context, graph) if spec.stores else None
    if op == n.TABLE_MAP_VALUES:
        return _table_map_values(spec, forward, write)
    return _table_filter(spec, forward, write)


def _table_join(
    spec: TableJoinSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: TaskProcessorGraph
) -> Forward:
    """A side of a table-table join (`table_table_join`), or its merger."""
    if spec.op != n.TABLE_JOIN_MERGE:
        assert spec.value_getter is not None
        return table_table_join(spec, forward, timestamped_value_getter(spec.value_getter, names, context), graph)
    if not spec.stores:
        return join_merger(spec, forward, None, None)
    direct_old: list[Any] = [None]
    return join_merger(spec, forward, _materialized(spec, forward, names, context, graph, direct_old), direct_old)


def _foreign_key_join_node(
    spec: ForeignKeyJoinNodeSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: TaskProcessorGraph
) -> Forward:
    """A processor of a foreign-key join (`foreign_key_join`), with the table its value getter reads."""
    get = None if spec.value_getter is None else timestamped_value_getter(spec.value_getter, names, context)
    return foreign_key_join.build(spec, forward, names, context, graph, get)


def _grouped_table_aggregation(
    spec: TableAggregateSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: TaskProcessorGraph
) -> Forward:
    """aggregate/reduce of a grouped table (`table_aggregation`)."""
    return table_aggregation(spec, forward, names, context.get_state_store(spec.stores[0]), graph)


def _table_source(
    spec: TableOperationSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: TaskProcessorGraph
) -> Forward:
    if not spec.stores:

        def unmaterialized_source(key: Any, value: Any, _node: str = spec.name) -> None:
            try:
                if key is None:
                    graph.dropped.null_key_or_value(_node, graph.record)
                    return
                forward(key, Change(value, None))
            except Exception as exc:
                raised_in(exc, _node)
                raise

        return unmaterialized_source

    write = _materialized(spec, forward, names, context, graph)

    def table_source(key: Any, value: Any, _node: str = spec.name) -> None:
        try:
            if key is None:
                graph.dropped.null_key_or_value(_node, graph.record)
                return
            write(key, value)
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return table_source


class Write(Protocol):
    """Writes a table node's result into its store (None deletes); the store's listener forwards it."""

    def __call__(self, key: Any, value: Any, *, skip_absent_delete: bool = False) -> None: ...


def _materialized(
    spec: TableNodeSpec,
    forward: Forward,
    names: TopicNames,
    context: TaskContext,
    graph: TaskProcessorGraph,
    direct_old: list[Any] | None = None,
) -> Write:
    """`write(key, value)` into the node's timestamped store (None deletes), whose flush listener forwards
    `Change(new, old if spec.send_old_values)` under the update's timestamp (Kafka's TimestampedTupleForwarder
    with its TimestampedCacheFlushListener)."""
    (store_name,) = spec.stores
    s = store_access(names, store_name, context)
    store, topic, key_ser, key_de, value_ser, value_de = s.store, s.topic, s.key_ser, s.key_de, s.value_ser, s.value_de
    get, put = store.get, store.put
    record = graph.record
    send_old = spec.send_old_values
    value_of, timestamp_of, encode = timestamped.value_of, timestamped.timestamp_of, timestamped.encode

    # The store keeps no timestamp for a delete, so a cached one waits in the record context to be logged and
    # forwarded with its own timestamp, as Kafka's cache entry keeps its record context (bounded: if it
    # overflows, the flushed deletes fall back to the flushing record's timestamp).
    pending_deletes = record.delete_timestamps

    # always installed, as Kafka's is
    def on_flush(
        key: bytes, new_value: bytes | None, old_value: bytes | None = None, timestamp: int | None = None
    ) -> None:
        k = key_de(topic, key)
        if direct_old is not None and passthrough:  # written through: the writer's old value, as Kafka forwards
            old = direct_old[0] if send_old else None
        else:
            old = value_de(topic, value_of(old_value)) if send_old and old_value is not None else None
        if new_value is None:
            current = record.timestamp
            record.timestamp = pending_deletes.pop((topic, key), current if timestamp is None else timestamp)
            try:
                forward(k, Change(None, old))
            finally:
                record.timestamp = current
            return
        current = record.timestamp
        record.timestamp = timestamp_of(new_value)
        try:
            forward(k, Change(value_de(topic, value_of(new_value)), old))
        finally:
            record.timestamp = current

    store.set_flush_listener(on_flush)
    passthrough = bool(getattr(store, "passthrough", False))

    def write(key: Any, value: Any, *, skip_absent_delete: bool = False) -> None:
        store_key = key_ser(topic, key)
        if value is None:
            present = get(store_key) is not None
            if skip_absent_delete and not present:
                return  # Kafka's materialized filter with old values: neither the new nor the stored one passes
            # a delete of a key the store does not have is not flushed downstream: nothing to remember
            if (topic, store_key) in pending_deletes or present:
                if len(pending_deletes) >= MAX_PENDING_DELETES:
                    pending_deletes.clear()
                pending_deletes[(topic, store_key)] = record.timestamp
            put(store_key, None)
            return
        pending_deletes.pop((topic, store_key), None)
        serialized = value_ser(topic, value)
        put(store_key, None if serialized is None else encode(record.timestamp, serialized))

    return write


def _table_filter(spec: TableOperationSpec, forward: Forward, write: Write | None) -> Forward:
    """`write`: the node's own store (a materialized filter), which forwards what it stores."""
    predicate: Any = spec.fn
    filter_not = spec.op == n.TABLE_FILTER_NOT
    send_old = spec.send_old_values

    def compute(key: Any, value: Any) -> Any:
        if value is not None and filter_not != bool(predicate(key, value)):
            return value
        return None

    def table_filter(key: Any, change: Change, _node: str = spec.name) -> None:
        try:
            new = compute(key, change.new)
            if write is not None:
                # materialized with old values: the old value is the node's own stored one (Kafka's computeOldValue),
                # not the upstream change's, which an unmaterialized parent never sends; without them every delete
                # goes to the store (and its changelog), as in Kafka
                write(key, new, skip_absent_delete=send_old)
                return
            old = compute(key, change.old) if send_old else None
            if send_old and old is None and new is None:
                return  # neither side passes: nothing changed downstream
            forward(key, Change(new, old))
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return table_filter


def _table_map_values(spec: TableOperationSpec, forward: Forward, write: Write | None) -> Forward:
    mapper: Any = spec.fn
    send_old = spec.send_old_values

    def table_map_values(key: Any, change: Change, _node: str = spec.name) -> None:
        try:
            new = None if change.new is None else mapper(change.new)
            if write is not None:
                write(key, new)
                return
            old = mapper(change.old) if send_old and change.old is not None else None
            forward(key, Change(new, old))
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return table_map_values


def stream_table_join(
    spec: StreamTableJoinSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: TaskProcessorGraph
) -> Forward:
    """Each stream record looks the table up (through the cache, so it sees the latest write) and is joined
    with the table's value; it keeps its key and timestamp. The table side never triggers output."""
    assert spec.value_getter is not None
    get = value_getter(spec.value_getter, names, context)
    joiner: Any = spec.fn
    if spec.op == n.STREAM_TABLE_LEFT_JOIN:

        def left_join(key: Any, value: Any, _node: str = spec.name) -> None:
            try:
                if value is None:
                    graph.dropped.null_key_or_value(_node, graph.record)
                    return
                forward(key, joiner(value, None if key is None else get(key)))
            except Exception as exc:
                raised_in(exc, _node)
                raise

        return left_join

    def join(key: Any, value: Any, _node: str = spec.name) -> None:
        try:
            if key is None or value is None:
                graph.dropped.null_key_or_value(_node, graph.record)
                return
            table_value = get(key)
            if table_value is not None:
                forward(key, joiner(value, table_value))
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return join


# typed where they are made, not inferred from the decorator: mypy cannot infer a decorated function's type
# across the runtime's import cycle (processor_builders reads these)
table_operation: Builder[TableOperationSpec] = _taking_changes(_table_operation)
table_join: Builder[TableJoinSpec] = _taking_changes(_table_join)
foreign_key_join_node: Builder[ForeignKeyJoinNodeSpec] = _taking_changes(_foreign_key_join_node)
grouped_table_aggregation: Builder[TableAggregateSpec] = _taking_changes(_grouped_table_aggregation)

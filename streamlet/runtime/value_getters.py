"""How KTables are read by joins (Kafka Streams' `KTableValueGetter`s): a key's current value and timestamp.

A table is read from its nearest store, then through the filters and `mapValues` between that store and the
table (`ValueGetterSpec.steps`); an unmaterialized table-table join's result by joining both tables' values
(`KTableKTable{Inner,Left,Outer}JoinValueGetter`); a suppressed table through its buffer's prior value, then
its parent (`KTableSuppressProcessorSupplier#view`). The specs are built by `streamlet.topology.ktable`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from streamlet.runtime.store_access import store_access
from streamlet.runtime.topic_names import TopicNames
from streamlet.state import timestamped
from streamlet.topology import nodes as n
from streamlet.topology.nodes import ValueGetterSpec
from streamlet.topology.topology import changelog_topic

__all__ = ["TaskContext", "buffer_topic", "timestamped_value_getter", "value_getter"]


class TaskContext(Protocol):
    """What value getters (and the table processors) need of `processor_graph.TaskContext`: the task's stores."""

    def get_state_store(self, name: str) -> Any: ...


def buffer_topic(names: TopicNames, buffer: str) -> str:
    """What a suppression buffer's serdes are called with: its changelog's name, which Kafka uses even when
    the buffer is not logged."""
    return f"{names.application_id}-{changelog_topic(buffer)}"


def value_getter(getter: ValueGetterSpec, names: TopicNames, context: TaskContext) -> Callable[[Any], Any]:
    """`get(key)`: the table's current value for a (non-null) key, or None (Kafka's `KTableValueGetter`)."""
    get_with_timestamp = timestamped_value_getter(getter, names, context)

    def get(key: Any) -> Any:
        found = get_with_timestamp(key)
        return None if found is None else found[0]

    return get


def timestamped_value_getter(
    getter: ValueGetterSpec, names: TopicNames, context: TaskContext
) -> Callable[[Any], tuple[Any, int] | None]:
    """`get(key)`: the table's current `(value, timestamp)` for a key, or None (a `ValueAndTimestamp`)."""
    if getter.join is not None:
        read = _joined_value(getter, names, context)
    elif getter.suppressed is not None:
        read = _suppressed_value(getter, names, context)
    else:
        read = _stored_value(getter, names, context)
    steps = getter.steps
    if not steps:
        return read

    def get(key: Any) -> tuple[Any, int] | None:
        found = read(key)
        if found is None:
            return None
        value, timestamp = found
        for op, fn in steps:
            if value is None:
                return None
            if op == n.TABLE_FILTER:
                value = value if fn(key, value) else None
            elif op == n.TABLE_FILTER_NOT:
                value = None if fn(key, value) else value
            else:
                value = fn(value)
        return None if value is None else (value, timestamp)

    return get


def _stored_value(
    getter: ValueGetterSpec, names: TopicNames, context: TaskContext
) -> Callable[[Any], tuple[Any, int] | None]:
    s = store_access(names, getter.store, context)
    read, topic, key_ser, value_de = s.store.get, s.topic, s.key_ser, s.value_de
    value_of, timestamp_of = timestamped.value_of, timestamped.timestamp_of

    def get(key: Any) -> tuple[Any, int] | None:
        raw = read(key_ser(topic, key))
        return None if raw is None else (value_de(topic, value_of(raw)), timestamp_of(raw))

    return get


def _suppressed_value(
    getter: ValueGetterSpec, names: TopicNames, context: TaskContext
) -> Callable[[Any], tuple[Any, int] | None]:
    """A suppressed table's value: a buffered key's value before its first buffered update, with an unknown
    timestamp (-1), else the parent's (Kafka's `priorValueForBuffered`, then the parent getter)."""
    suppressed = getter.suppressed
    assert suppressed is not None
    s = store_access(names, suppressed.buffer, context, topic=buffer_topic(names, suppressed.buffer))
    buffer, topic, key_ser, value_de = s.store, s.topic, s.key_ser, s.value_de
    parent = timestamped_value_getter(suppressed.parent, names, context)

    def get(key: Any) -> tuple[Any, int] | None:
        buffered, prior = buffer.prior_value_for_buffered(key_ser(topic, key))
        if not buffered:
            return parent(key)
        return None if prior is None else (value_de(topic, prior), UNKNOWN_TIMESTAMP)

    return get


#: the timestamp of a value whose time is not known (Kafka's RecordQueue.UNKNOWN)
UNKNOWN_TIMESTAMP = -1


def _joined_value(
    getter: ValueGetterSpec, names: TopicNames, context: TaskContext
) -> Callable[[Any], tuple[Any, int] | None]:
    """An unmaterialized table-table join's value: both tables read and joined as the join's first side joins
    them (Kafka's `KTableKTable{Inner,Left,Outer}JoinValueGetter`), at the larger of the two timestamps."""
    join = getter.join
    assert join is not None
    this = timestamped_value_getter(join.this, names, context)
    other = timestamped_value_getter(join.other, names, context)
    joiner, op = join.joiner, join.op

    def joined(key: Any) -> tuple[Any, int] | None:
        found = this(key)
        if found is None and op != n.TABLE_JOIN_OUTER:
            return None
        partner = other(key)
        if found is None:
            return None if partner is None else (joiner(None, partner[0]), partner[1])
        if partner is None:
            return None if op == n.TABLE_JOIN_INNER else (joiner(found[0], None), found[1])
        return joiner(found[0], partner[0]), max(found[1], partner[1])

    def get(key: Any) -> tuple[Any, int] | None:
        result = joined(key)
        return None if result is None or result[0] is None else result  # ValueAndTimestamp.make(null, t): null

    return get

"""count/reduce/aggregate of a grouped stream (Kafka Streams' `KStreamAggregate`, `KStreamReduce`,
`KStreamWindowAggregate`; the session and sliding-window ones in `session_aggregation` and
`sliding_aggregation`), as processor nodes of a task.

They follow Kafka Streams' caching semantics: they only update their store; the store calls the flush
listener they registered when its record cache flushes or evicts an entry (or on every put when caching is
off), and the listener forwards `(key, new value)` downstream (e.g. KTABLE-TOSTREAM -> sink). Records with a
null key or null value are dropped by aggregations, as in Kafka Streams.
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from typing import Any

from streamlet.errors import SerializationError
from streamlet.runtime.aggregate_functions import Graph
from streamlet.runtime.failing_node import raised_in
from streamlet.runtime.forwarding import Forward, noop
from streamlet.runtime.session_aggregation import session_aggregation
from streamlet.runtime.sliding_aggregation import sliding_aggregation
from streamlet.runtime.store_access import store_access
from streamlet.runtime.task_context import TaskContext
from streamlet.runtime.topic_names import TopicNames
from streamlet.state import timestamped, window_key_schema
from streamlet.topology import nodes as n
from streamlet.topology.nodes import AggregateSpec
from streamlet.topology.session_windows import SessionWindows
from streamlet.topology.sliding_windows import SlidingWindows
from streamlet.topology.windows import TimeWindow, TimeWindows, Windowed

__all__ = ["build"]


def build(spec: AggregateSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: Graph) -> Forward:
    """The processor of a count, reduce or aggregate (an op of `nodes.AGGREGATING_OPS`), windowed or not."""
    if isinstance(spec.windows, SessionWindows | SlidingWindows):
        return _other_window_aggregation(spec, forward, names, context, graph)
    if spec.windows is not None:
        return _window_aggregation(spec, forward, names, context, graph)
    return _aggregation(spec, forward, names, context, graph)


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


_INT64 = struct.Struct(">q")


def _old_values(store: Any) -> tuple[bool, list[bytes | None]]:
    """Whether `store` emits each write at once (no cache), and a cell for the aggregate a write replaces.

    Without a cache Kafka forwards an update straight from the aggregation, whose old value is the aggregate
    it started from: the initializer's for a new key, where a cached store's flush reports none (nothing was
    stored). The aggregation puts it in the cell just before its write; the listener, called within the
    write, forwards it (to a suppression buffer, which logs it)."""
    return bool(getattr(store, "passthrough", False)), [None]


def _other_window_aggregation(
    spec: AggregateSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: Graph
) -> Forward:
    """Session and sliding-window aggregations (in their own modules), as a node of this graph."""
    build = session_aggregation if isinstance(spec.windows, SessionWindows) else sliding_aggregation
    store = context.get_state_store(spec.stores[0])
    aggregate = build(spec, None if forward is noop else forward, names, store, graph)

    def windowed_aggregate(key: Any, value: Any, _node: str = spec.name) -> None:
        try:
            aggregate(key, value)
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return windowed_aggregate


def _aggregation(
    spec: AggregateSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: Graph
) -> Forward:
    """count/reduce/aggregate on a timestamped store (`KStreamAggregate`, `KStreamReduce` in Kafka 4.x).

    The aggregate's timestamp is the record's for a new key, else the larger of the record's and the stored
    aggregate's; downstream updates carry it (the store's flush listener reads it back from the value).
    """
    (store_name,) = spec.stores
    s = store_access(names, store_name, context)
    store, topic, key_ser, key_de, value_ser, value_de = s.store, s.topic, s.key_ser, s.key_de, s.value_ser, s.value_de
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
        if forward is noop:
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
            try:
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
                    corrupt = SerializationError(
                        f"store {store_name} holds a {len(old) - timestamped.TIMESTAMP_SIZE}-byte count for a key; "
                        "Size of data received by LongDeserializer is not 8"
                    )
                    corrupt.__cause__ = exc  # mypyc ignores `raise ... from exc`
                    raise corrupt  # noqa: B904 (its cause is set)
                put(store_key, encode(max(record.timestamp, timestamp_of(old)), pack(total)))
            except Exception as exc:
                raised_in(exc, _node)
                raise

        return count

    fn: Any = spec.fn
    if op == n.REDUCE:

        def reduce(key: Any, value: Any, _node: str = spec.name) -> None:
            try:
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
            except Exception as exc:
                raised_in(exc, _node)
                raise

        return reduce

    initializer: Any = spec.initializer

    def aggregate(key: Any, value: Any, _node: str = spec.name) -> None:
        try:
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
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return aggregate


def _window_aggregation(
    spec: AggregateSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: Graph
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
    s = store_access(names, store_name, context)
    store, topic, key_ser, key_de, value_ser, value_de = s.store, s.topic, s.key_ser, s.key_de, s.value_ser, s.value_de
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
        if forward is noop:  # listening anyway: see _aggregation
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
        try:
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
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return window_aggregate

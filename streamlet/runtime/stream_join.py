"""Processors of KStream-KStream joins (Kafka Streams 4.1's `KStreamJoinWindow` and `KStreamKStreamJoin`).

Per side, a windowed node forwards each record to its join node and then keeps it (key not null, duplicates
too) in its side's window store under `key + timestamp + sequence number`. The join node looks up the other
side's store for records of the same key in `[t - before, t + after]` (its own side's view of the windows) and
emits `joiner(value, other_value)` for each, at the later of the two timestamps. Records with a null key or
value are dropped (a left/outer side still emits a null-key record at once, joined with None).

Left and outer joins (KIP-633, no spurious results): an unmatched record waits in a store shared by both sides,
keyed `timestamp + side + key`, and is emitted with None only once the join's stream time (the largest
timestamp either side has seen, kept per task by a `TimeTracker`) passes its window's end plus the grace
period; a later partner removes it. The store is scanned only when a record that is not out of order arrives,
something may be due, and at most once per second of wall-clock time, as in Kafka. Every byte format (window
store keys, the shared store's keys and list values, the changelogs) is Kafka's.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from typing import Any, Protocol, cast

from streamlet.runtime.dropped_records import LATE, DroppedRecords
from streamlet.runtime.failing_node import raised_in
from streamlet.runtime.forwarding import Forward
from streamlet.runtime.record_context import RecordContext
from streamlet.runtime.store_access import store_access
from streamlet.runtime.topic_names import TopicNames
from streamlet.state import window_key_schema
from streamlet.state.window_store import RocksDBWindowStore
from streamlet.topology import nodes as n
from streamlet.topology.nodes import StreamStreamJoinSpec

#: Kafka's `__emit.interval.ms.kstreams.outer.join.spurious.results.fix__` default
EMIT_INTERVAL_MS = 1000
NO_TIMESTAMP = -1
_LONG_MAX = (1 << 63) - 1
_MAX_SEQNUM = 0x7FFFFFFF
_TIMESTAMP = struct.Struct(">q")
_INT = struct.Struct(">i")
_LEFT, _RIGHT = b"\x01", b"\x00"
_VARIABLE_SIZE = b"\x01"  # ListSerializer's serialization strategy of byte arrays


class TaskContext(Protocol):
    def get_state_store(self, name: str) -> Any: ...


class TaskProcessorGraph(Protocol):
    """What the join needs of `processor_graph.TaskProcessorGraph`."""

    record: RecordContext
    dropped: DroppedRecords
    join_trackers: dict[str, TimeTracker]
    join_emit_interval_ms: int

    @property
    def punctuations(self) -> Any: ...  # its `clock()` is the task's wall clock (ms)


class TimeTracker:
    """What both sides of one join share in a task (Kafka's `KStreamImplJoin.TimeTracker`): the largest
    timestamp seen, the smallest of the records waiting in the shared store, and when to scan it next."""

    __slots__ = ("stream_time", "min_time", "next_time_to_emit")

    def __init__(self) -> None:
        self.stream_time = NO_TIMESTAMP
        self.min_time = _LONG_MAX
        self.next_time_to_emit = 0


def _java_long(value: int) -> int:
    """`value` wrapped to a signed 64-bit long, as Java's arithmetic wraps (min_time starts at Long.MAX_VALUE)."""
    return ((value + (1 << 63)) % (1 << 64)) - (1 << 63)


def build(
    spec: StreamStreamJoinSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: TaskProcessorGraph
) -> Forward:
    """The processor of a stream-stream join node (`STREAM_JOIN_WINDOW`, `STREAM_JOIN`, `STREAM_JOIN_MERGE`)."""
    if spec.op == n.STREAM_JOIN_WINDOW:
        return _windowed(spec, forward, names, context, graph)
    if spec.op == n.STREAM_JOIN:
        return _join(spec, forward, names, context, graph)
    if spec.op == n.STREAM_SELF_JOIN:
        return _self_join(spec, forward, names, context, graph)
    return forward  # the merge: both sides' results as they come


def _windowed(
    spec: StreamStreamJoinSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: TaskProcessorGraph
) -> Forward:
    """`KStreamJoinWindow`: forward first (the join must not find the record itself), then store it. The
    sequence number starts at 0 with every task (as Kafka's change-logging layer's does)."""
    (store_name,) = spec.stores
    s = store_access(names, store_name, context)
    store, topic, key_ser, value_ser = s.store, s.topic, s.key_ser, s.value_ser
    record = graph.record
    seqnum = [0]
    segments = _segmented(store)

    def windowed(key: Any, value: Any, _node: str = spec.name) -> None:
        try:
            timestamp = record.timestamp
            forward(key, value)
            if key is not None:
                # out of order and in a dropped segment: the store drops the write, no later record can join it
                if segments is not None and timestamp < segments.observed_stream_time and value is not None:
                    if segments.is_expired(timestamp):
                        _expired(graph, _node, record, segments)
                seqnum[0] = (seqnum[0] + 1) & _MAX_SEQNUM
                store_key = window_key_schema.to_store_key(key_ser(topic, key), timestamp, seqnum[0])
                store.put(store_key, value_ser(topic, value))  # a null value is logged, not stored
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return windowed


def _segmented(store: Any) -> RocksDBWindowStore | None:
    """The segmented window store under a store's caching and logging layers (None: another kind of store)."""
    while store is not None and not isinstance(store, RocksDBWindowStore):
        store = getattr(store, "inner", None)
    return store


def _expired(graph: TaskProcessorGraph, node: str, record: RecordContext, segments: RocksDBWindowStore) -> None:
    """Count and log a join record its window store drops (Kafka logs "Skipping record for expired segment"
    and counts it in the store's expired-window-record-drop sensor; here it is a dropped record of the node)."""
    graph.dropped.skipped(
        node,
        LATE,
        "Skipping record for expired segment. processor=[%s] task=[%s] topic=[%s] partition=[%d] offset=[%d] "
        "timestamp=[%d] expiration=[%d] streamTime=[%d]",
        node,
        graph.dropped.task_id,
        record.topic,
        record.partition,
        record.offset,
        record.timestamp,
        segments.live_from(),
        segments.observed_stream_time,
    )


def _join(
    spec: StreamStreamJoinSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: TaskProcessorGraph
) -> Forward:
    """One side of `KStreamKStreamJoin` (see the module docstring)."""
    join = spec.stream_join
    assert join is not None
    stores = names.topology.stores
    this_spec, other_spec = stores[join.this_store], stores[join.other_store]
    this_topic, other_topic = names.changelog_topic(join.this_store), names.changelog_topic(join.other_store)
    key_ser = cast(Callable[[str, Any], bytes], this_spec.key_serde.serialize)  # keys here are not null
    key_de = this_spec.key_serde.deserialize
    other_de = other_spec.value_serde.deserialize
    other_store = context.get_state_store(join.other_store)
    windows, left, outer = join.windows, join.left, join.outer
    before, after = (windows.before_ms, windows.after_ms) if left else (windows.after_ms, windows.before_ms)
    grace = windows.grace_ms
    joiner: Any = spec.fn
    record = graph.record
    tracker = graph.join_trackers.setdefault(join.join, TimeTracker())
    shared = None if join.outer_store is None else _SharedStore(context.get_state_store(join.outer_store))
    # the shared store's values: the left side's with the left store's serde, the right side's with the right's
    left_spec, right_spec = (this_spec, other_spec) if left else (other_spec, this_spec)
    left_topic, right_topic = (this_topic, other_topic) if left else (other_topic, this_topic)
    this_side, other_side = (_LEFT, _RIGHT) if left else (_RIGHT, _LEFT)
    this_ser = this_spec.value_serde.serialize
    clock = graph.punctuations.clock
    emit_interval = graph.join_emit_interval_ms

    def forward_at(key: Any, value: Any, timestamp: int) -> None:
        current = record.timestamp
        record.timestamp = timestamp
        try:
            forward(key, value)
        finally:
            record.timestamp = current

    def emit_non_joined(store: _SharedStore) -> None:
        """`emitNonJoinedOuterRecords`: the waiting records whose windows closed, oldest first, each key deleted
        once all its records were emitted."""
        if _java_long(tracker.min_time + after + grace) >= tracker.stream_time:
            return
        now = clock()
        if now < tracker.next_time_to_emit:
            return
        tracker.next_time_to_emit = now + emit_interval
        tracker.min_time = _LONG_MAX
        previous: bytes | None = None
        left_open = right_open = False
        for store_key, side, raw in store.all():
            timestamp = _TIMESTAMP.unpack_from(store_key)[0]
            tracker.min_time = timestamp
            if left_open and right_open:
                break  # no more candidates on either side
            lookback = windows.after_ms if side == _LEFT else windows.before_ms
            if _java_long(timestamp + lookback + grace) >= tracker.stream_time:
                if side == _LEFT:
                    left_open = True
                else:
                    right_open = True
                continue
            key = key_de(this_topic, store_key[_TIMESTAMP.size + 1 :])
            left_value = left_spec.value_serde.deserialize(left_topic, raw) if side == _LEFT else None
            right_value = right_spec.value_serde.deserialize(right_topic, raw) if side == _RIGHT else None
            this_value, other_value = (left_value, right_value) if left else (right_value, left_value)
            forward_at(key, joiner(this_value, other_value), timestamp)
            if previous is not None and previous != store_key:
                store.delete(previous)
            previous = store_key
        if previous is not None:
            store.delete(previous)

    def stream_join(key: Any, value: Any, _node: str = spec.name) -> None:
        try:
            timestamp = record.timestamp
            if timestamp > tracker.stream_time:
                tracker.stream_time = timestamp
            if outer and key is None and value is not None:
                forward(key, joiner(value, None))
                return
            if key is None or value is None:
                graph.dropped.null_key_or_value(_node, graph.record)
                return
            if shared is not None and timestamp == tracker.stream_time:
                emit_non_joined(shared)
            time_from, time_to = max(0, timestamp - before), max(0, timestamp + after)
            key_bytes = key_ser(this_topic, key)
            partners = list(_fetch(other_store, key_bytes, time_from, time_to))
            for other_timestamp, other_value in partners:
                if shared is not None:  # the partner no longer waits for one
                    shared.delete_if_present(_TIMESTAMP.pack(other_timestamp) + other_side + key_bytes)
                forward_at(key, joiner(value, other_de(other_topic, other_value)), max(timestamp, other_timestamp))
            if not outer or partners:
                return
            if shared is None or time_to < tracker.stream_time:  # its window closed already: no partner can come
                forward(key, joiner(value, None))
                return
            tracker.min_time = min(tracker.min_time, timestamp)
            value_bytes = this_ser(this_topic, value)
            assert value_bytes is not None  # a non-null value
            shared.append(_TIMESTAMP.pack(timestamp) + this_side + key_bytes, this_side, value_bytes)
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return stream_join


def _self_join(
    spec: StreamStreamJoinSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: TaskProcessorGraph
) -> Forward:
    """`KStreamKStreamSelfJoin` (`single.store.self.join`): the stream's one window store serves as both sides.
    A record meets the stored ones within its own side's window, then, within the other side's, the stored
    ones meet it; its join with itself comes before the first later partner (or last), unless already expired.
    Kafka uses it for any join of a stream with itself once the rule is on, whatever the join's kind."""
    join = spec.stream_join
    assert join is not None
    (store_name,) = spec.stores
    s = store_access(names, store_name, context)
    store, topic, key_ser, value_de = s.store, s.topic, s.key_ser, s.value_de
    windows = join.windows
    retention = windows.before_ms + windows.after_ms + windows.grace_ms  # JoinWindows' size() plus grace
    joiner: Any = spec.fn
    record = graph.record
    tracker = TimeTracker()  # the processor's own, as Kafka's

    def forward_at(key: Any, value: Any, timestamp: int) -> None:
        current = record.timestamp
        record.timestamp = timestamp
        try:
            forward(key, value)
        finally:
            record.timestamp = current

    def self_join(key: Any, value: Any, _node: str = spec.name) -> None:
        try:
            if key is None or value is None:
                graph.dropped.null_key_or_value(_node, graph.record)
                return
            timestamp = record.timestamp
            joined_with_self = joiner(value, value)
            if timestamp > tracker.stream_time:
                tracker.stream_time = timestamp
            emit_self = timestamp > tracker.stream_time - retention + 1
            emitted_self = False
            key_bytes = key_ser(topic, key)
            this_from, this_to = max(0, timestamp - windows.before_ms), max(0, timestamp + windows.after_ms)
            for other_timestamp, raw in list(_fetch(store, key_bytes, this_from, this_to)):
                forward_at(key, joiner(value, value_de(topic, raw)), max(timestamp, other_timestamp))
            other_from, other_to = max(0, timestamp - windows.after_ms), max(0, timestamp + windows.before_ms)
            for other_timestamp, raw in list(_fetch(store, key_bytes, other_from, other_to)):
                later = max(timestamp, other_timestamp)
                if timestamp < later and not emitted_self and emit_self:
                    emitted_self = True
                    forward_at(key, joined_with_self, timestamp)
                forward_at(key, joiner(value_de(topic, raw), value), later)
            if not emitted_self and emit_self:
                forward_at(key, joined_with_self, timestamp)
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return self_join


def _fetch(store: Any, key: bytes, time_from: int, time_to: int) -> Iterator[tuple[int, bytes]]:
    """The window store's records of `key` in `[time_from, time_to]`, by timestamp then sequence number
    (Kafka's `WindowStore#fetch(key, from, to)`; the store hides expired ones)."""
    if time_from > time_to:
        return
    lower = window_key_schema.to_store_key(key, time_from, 0)
    upper = window_key_schema.to_store_key(key, time_to, _MAX_SEQNUM)
    for store_key, value in store.range(lower, upper):
        if window_key_schema.key_of(store_key) != key:
            continue  # a longer key that sorts in between
        timestamp = window_key_schema.window_start_of(store_key)
        if time_from <= timestamp <= time_to:
            yield timestamp, value


class _SharedStore:
    """The left/outer join's store of waiting records, in Kafka's `ListValueStore` format: each key holds a list
    (`0x01`, int32 count, then int32 length + bytes per element) of `side + value` elements."""

    __slots__ = ("_store",)

    def __init__(self, store: Any) -> None:
        self._store = store

    def append(self, key: bytes, side: bytes, value: bytes) -> None:
        elements = _decode_list(self._store.get(key))
        elements.append(side + value)
        self._store.put(key, _encode_list(elements))

    def delete_if_present(self, key: bytes) -> None:
        """`putIfAbsent(key, null)` of Kafka's list store: deletes (and logs) only a key that is there."""
        if self._store.get(key) is not None:
            self._store.put(key, None)

    def delete(self, key: bytes) -> None:
        self._store.put(key, None)

    def all(self) -> Iterator[tuple[bytes, bytes, bytes]]:
        """`(key, side, value bytes)` of every element, in key order (timestamp, then side: right first)."""
        for key, raw in self._store.all():
            for element in _decode_list(raw):
                yield key, element[:1], element[1:]


def _encode_list(elements: list[bytes]) -> bytes:
    parts = [_VARIABLE_SIZE, _INT.pack(len(elements))]
    for element in elements:
        parts.append(_INT.pack(len(element)))
        parts.append(element)
    return b"".join(parts)


def _decode_list(raw: bytes | None) -> list[bytes]:
    if raw is None:
        return []
    (count,) = _INT.unpack_from(raw, 1)
    elements, offset = [], 1 + _INT.size
    for _ in range(count):
        (size,) = _INT.unpack_from(raw, offset)
        offset += _INT.size
        elements.append(raw[offset : offset + size])
        offset += size
    return elements

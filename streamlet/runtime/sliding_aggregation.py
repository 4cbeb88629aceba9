"""count/reduce/aggregate per key over sliding windows (Kafka's `KStreamSlidingWindowAggregate`, emitting on
update, on a store that iterates backwards as RocksDB does: its `processReverse` and `processEarly`).

A record at `t` updates every existing window of its key that contains it, then creates the windows that
now hold a distinct set of records: its left window `[t - d, t]`, its right window `[t + 1, t + 1 + d]` if
later records fall in it, and the right window of the previous record if `t` falls in that one. Records
with `t < d` share the window `[0, d]` (no negative starts). Stream time is the largest timestamp this
processor has seen; a window closes once stream time passes its end by the grace period, and a record
whose windows all closed is dropped and counted, as are null keys and null values (Kafka skips both here).
Each window's aggregate sits in the window store with its timestamp: the largest record timestamp in it.
"""

from __future__ import annotations

from typing import Any

from streamlet.runtime.aggregate_functions import Graph, aggregate_functions
from streamlet.runtime.failing_node import raised_in
from streamlet.runtime.forwarding import Forward
from streamlet.runtime.store_access import store_access
from streamlet.runtime.topic_names import TopicNames
from streamlet.state import timestamped
from streamlet.state import window_key_schema as schema
from streamlet.topology.nodes import AggregateSpec
from streamlet.topology.sliding_windows import SlidingWindows
from streamlet.topology.windows import TimeWindow, Windowed

#: Kafka's `ValueAndTimestamp`: an aggregate and the largest timestamp of the records in it
ValueAndTimestamp = tuple[Any, int]


def _make(value: Any, timestamp: int) -> ValueAndTimestamp | None:
    """`ValueAndTimestamp.make`: null for a null value."""
    return None if value is None else (value, timestamp)


def sliding_aggregation(
    spec: AggregateSpec, forward: Forward | None, names: TopicNames, store: Any, graph: Graph
) -> Forward:
    """The node of a sliding-window aggregation on `store` (its task's outermost store); `forward` is None
    when the node has no downstream nodes."""
    windows = spec.windows
    assert isinstance(windows, SlidingWindows)
    (store_name,) = spec.stores
    s = store_access(names, store_name)
    topic, key_ser, key_de = s.topic, s.key_ser, s.key_de
    functions = aggregate_functions(spec, s.spec, topic)
    initial, update, encode, decode = functions.initial, functions.update, functions.encode, functions.decode
    difference, grace = windows.time_difference_ms, windows.grace_ms
    record = graph.record
    observed = [-1]  # this processor's stream time (Kafka's observedStreamTime), in a cell for the closure
    # Without a cache Kafka forwards each update with the aggregate it started from as the old value (see
    # stream_aggregation._old_values): the window's, or the initial one for a new window; none for a right window.
    direct = bool(getattr(store, "passthrough", False))
    replaced: list[bytes | None] = [None]

    # Always listen, even without downstream nodes (see stream_aggregation._aggregation).
    def on_flush(
        key: bytes, new_value: bytes | None, old_value: bytes | None = None, timestamp: int | None = None
    ) -> None:
        if forward is None:
            return
        start = schema.window_start_of(key)
        windowed = Windowed(key_de(topic, schema.key_of(key)), TimeWindow(start, start + difference))
        record.old_value = replaced[0] if direct else None if old_value is None else timestamped.value_of(old_value)
        try:
            if new_value is None:
                forward(windowed, None)
                return
            current = record.timestamp
            record.timestamp = timestamped.timestamp_of(new_value)
            try:
                forward(windowed, decode(timestamped.value_of(new_value)))
            finally:
                record.timestamp = current
        finally:
            record.old_value = None

    store.set_flush_listener(on_flush)

    def fetch(key_bytes: bytes, start_from: int, start_to: int) -> list[tuple[int, ValueAndTimestamp]]:
        """The windows of the key starting in `[start_from, start_to]`, oldest first (a snapshot)."""
        windows_found = []
        size = len(key_bytes) + schema.SUFFIX_SIZE
        lower, upper = schema.to_store_key(key_bytes, start_from), schema.to_store_key(key_bytes, start_to)
        for store_key, raw in store.range(lower, upper):
            if len(store_key) == size and store_key.startswith(key_bytes):
                stored = (decode(timestamped.value_of(raw)), timestamped.timestamp_of(raw))
                windows_found.append((schema.window_start_of(store_key), stored))
        return windows_found

    def put(key_bytes: bytes, start: int, stored: ValueAndTimestamp | None) -> None:
        encoded = None if stored is None else encode(stored[0])
        value = None if encoded is None or stored is None else timestamped.encode(stored[1], encoded)
        store.put(schema.to_store_key(key_bytes, start), value)

    def update_window(key: Any, key_bytes: bytes, value: Any, start: int, stored: ValueAndTimestamp | None) -> None:
        """`updateWindowAndForward`: add the record to the window, unless the window closed."""
        if start + difference < observed[0] - grace:
            graph.dropped.late(
                spec.name, record, start, start + difference, observed[0] - grace, observed[0], inclusive_end=True
            )
            return
        old = None if stored is None else stored[0]
        if direct:
            replaced[0] = None if old is None else encode(old)
        new_timestamp = record.timestamp if stored is None else max(record.timestamp, stored[1])
        put(key_bytes, start, _make(update(key, value, old), new_timestamp))

    def create_current_right_window(key_bytes: bytes, right: ValueAndTimestamp) -> None:
        if direct:
            replaced[0] = None  # Kafka forwards a new right window with no old value
        put(key_bytes, record.timestamp + 1, right)

    def create_windows(
        key: Any,
        key_bytes: bytes,
        value: Any,
        starts: set[int],
        right: ValueAndTimestamp | None,
        left: ValueAndTimestamp | None,
        left_created: bool,
        right_created: bool,
        previous: int | None,
    ) -> None:
        timestamp = record.timestamp
        if previous is not None:
            previous_right_start = previous + 1
            if previous_right_start not in starts and previous_right_start + difference >= timestamp:
                update_window(key, key_bytes, value, previous_right_start, _make(initial(), timestamp))
        if not left_created:
            if previous is not None and timestamp - difference <= previous and left is not None:
                stored = _make(left[0], timestamp)
            else:
                stored = _make(initial(), timestamp)
            update_window(key, key_bytes, value, timestamp - difference, stored)
        if not right_created and right is not None and right[1] > timestamp:
            create_current_right_window(key_bytes, right)

    def process_reverse(key: Any, key_bytes: bytes, value: Any) -> None:
        timestamp = record.timestamp
        starts: set[int] = set()
        left: ValueAndTimestamp | None = None
        right: ValueAndTimestamp | None = None
        left_created = right_created = False
        previous: int | None = None
        for start, stored in reversed(fetch(key_bytes, max(0, timestamp - 2 * difference), timestamp + 1)):
            starts.add(start)
            end = start + difference
            if start == timestamp + 1:
                right_created = True
            elif end > timestamp:
                if right is None:
                    right = stored
                update_window(key, key_bytes, value, start, stored)
            elif end == timestamp:
                left_created = True
                update_window(key, key_bytes, value, start, stored)
                if stored[1] < timestamp:
                    previous = stored[1]
                else:
                    return  # every window this record needs exists (Kafka returns here too)
            else:
                left = stored
                previous = stored[1]
                break
        create_windows(key, key_bytes, value, starts, right, left, left_created, right_created, previous)

    def process_early(key: Any, key_bytes: bytes, value: Any) -> None:
        """A record before `d`: it goes in the window `[0, d]`, which holds all such records."""
        timestamp = record.timestamp
        combined: ValueAndTimestamp | None = None
        right: ValueAndTimestamp | None = None
        right_created = False
        starts: set[int] = set()
        previous: int | None = None
        for start, stored in fetch(key_bytes, 0, timestamp + 1):
            starts.add(start)
            if start == 0:
                combined = stored
                if stored[1] < timestamp:
                    previous = stored[1]
            elif start <= timestamp:
                right = stored
                update_window(key, key_bytes, value, start, stored)
            elif start == timestamp + 1:
                right_created = True
            else:
                raise AssertionError(f"sliding window starting at {start} found for a record at {timestamp}")
        if right is None and combined is not None and combined[1] > timestamp:
            right = combined
        if not right_created and right is not None and right[1] > timestamp:
            create_current_right_window(key_bytes, right)
        if previous is not None and previous + 1 not in starts:
            update_window(key, key_bytes, value, previous + 1, _make(initial(), timestamp))
        update_window(key, key_bytes, value, 0, _make(initial(), timestamp) if combined is None else combined)

    def sliding_aggregate(key: Any, value: Any, _node: str = spec.name) -> None:
        try:
            if key is None or value is None:
                graph.dropped.null_key_or_value(_node, record)
                return
            timestamp = record.timestamp
            if timestamp > observed[0]:
                observed[0] = timestamp
            if timestamp + difference < observed[0] - grace:  # late: every window of the record closed
                graph.dropped.late(
                    _node,
                    record,
                    timestamp - difference,
                    timestamp,
                    observed[0] - grace,
                    observed[0],
                    inclusive_end=True,
                )
                return
            key_bytes = key_ser(topic, key)
            if timestamp < difference:
                process_early(key, key_bytes, value)
            else:
                process_reverse(key, key_bytes, value)
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return sliding_aggregate

"""count/reduce/aggregate per key and session (Kafka's `KStreamSessionWindowAggregate`, emitting on update).

A record at `t` finds the sessions of its key that end at or after `t - gap` and start at or before
`t + gap`, merges their aggregates (oldest end first) into a new session spanning them all and `t`, and
removes the merged ones: each removal is a tombstone downstream and in the changelog. Stream time is the
largest timestamp this processor has seen; if the merged session ends before `stream time - gap - grace`
the record is late: it is dropped, counted and logged by `graph.dropped` (Kafka's dropped-records sensor).
Only null keys are skipped (a null value still counts), as in Kafka. Updates go downstream stamped with the
session's end, as Kafka's `SessionCacheFlushListener` stamps them.
"""

from __future__ import annotations

from typing import Any

from streamlet.runtime.aggregate_functions import Graph, aggregate_functions
from streamlet.runtime.failing_node import raised_in
from streamlet.runtime.forwarding import Forward
from streamlet.runtime.store_access import store_access
from streamlet.runtime.topic_names import TopicNames
from streamlet.state import session_key_schema as schema
from streamlet.state.session_store import find_sessions
from streamlet.topology.nodes import AggregateSpec
from streamlet.topology.session_windows import SessionWindow, SessionWindows
from streamlet.topology.windows import Windowed


def session_aggregation(
    spec: AggregateSpec, forward: Forward | None, names: TopicNames, store: Any, graph: Graph
) -> Forward:
    """The node of a session-windowed aggregation on `store` (its task's outermost store); `forward` is
    None when the node has no downstream nodes."""
    windows = spec.windows
    assert isinstance(windows, SessionWindows)
    (store_name,) = spec.stores
    s = store_access(names, store_name)
    topic, key_ser, key_de = s.topic, s.key_ser, s.key_de
    functions = aggregate_functions(spec, s.spec, topic)
    initial, update, merge = functions.initial, functions.update, functions.merge
    encode, decode = functions.encode, functions.decode
    gap, grace = windows.inactivity_gap_ms, windows.grace_ms
    record = graph.record
    put = store.put
    observed = [-1]  # this processor's stream time (Kafka's observedStreamTime), in a cell for the closure

    # Always listen, even without downstream nodes (see stream_aggregation._aggregation).
    def on_flush(
        key: bytes, new_value: bytes | None, old_value: bytes | None = None, timestamp: int | None = None
    ) -> None:
        if forward is None:
            return
        end = schema.end_of(key)
        windowed = Windowed(key_de(topic, schema.key_of(key)), SessionWindow(schema.start_of(key), end))
        current = record.timestamp
        record.timestamp = end
        # Kafka forwards a merged-away session with its aggregate as the old value, a written one with none
        record.old_value = old_value if new_value is None else None
        try:
            forward(windowed, None if new_value is None else decode(new_value))
        finally:
            record.timestamp = current
            record.old_value = None

    store.set_flush_listener(on_flush)

    def session_aggregate(key: Any, value: Any, _node: str = spec.name) -> None:
        try:
            if key is None:
                graph.dropped.null_key_or_value(_node, record)
                return
            timestamp = record.timestamp
            if timestamp > observed[0]:
                observed[0] = timestamp
            close_time = observed[0] - grace - gap
            key_bytes = key_ser(topic, key)
            merged = list(find_sessions(store, key_bytes, timestamp - gap, timestamp + gap))
            aggregate = initial()
            start = end = timestamp
            for store_key, raw in merged:
                aggregate = merge(key, aggregate, decode(raw))
                start = min(start, schema.start_of(store_key))
                end = max(end, schema.end_of(store_key))
            if end < close_time:  # late: the merged session closed
                graph.dropped.late(_node, record, start, end, close_time, observed[0], inclusive_end=True)
                return
            if start != timestamp or end != timestamp:
                for store_key, _ in merged:
                    put(store_key, None)
            put(schema.to_store_key(key_bytes, start, end), encode(update(key, value, aggregate)))
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return session_aggregate

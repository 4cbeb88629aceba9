"""Grouped KTable aggregations: Kafka Streams' `KTableRepartitionMap`, `KTableAggregate` and `KTableReduce`.

A table is re-grouped by `KTable.group_by(selector)`: each update `Change(new, old)` of the table becomes
what leaves the old group and what joins the new one. `table_select` maps both values with the selector and
forwards, old first, `Change(None, old')` to the old group and `Change(new', None)` to the new one, or a single
`Change(new', old')` when both land in the same group (Kafka 3.5+, KIP-904). A pair whose key or value is
null is skipped. The repartition topic carries these changes (`streamlet.topology.change.ChangeSerde`).

The aggregation then subtracts the old value (only from an aggregate it holds) and adds the new one (from
`initializer()`, or for reduce from the value itself, when the key has no aggregate). count is an aggregate
of `0`, `+1` and `-1`, as in Kafka, so a group that empties keeps its count of 0. The timestamp of the result
is the record's, or the larger of the record's and the stored aggregate's when the stored one was used.

Downstream nodes get the plain aggregate, as from a stream aggregation (the store's flush listener forwards
it), with the replaced one in `record.old_value` for a suppression buffer.
"""

from __future__ import annotations

from typing import Any, cast

from streamlet.errors import StreamsFailure
from streamlet.runtime.aggregate_functions import Graph
from streamlet.runtime.failing_node import raised_in
from streamlet.runtime.forwarding import Forward
from streamlet.runtime.store_access import store_access
from streamlet.runtime.topic_names import TopicNames
from streamlet.state import timestamped
from streamlet.topology import nodes as n
from streamlet.topology.change import Change
from streamlet.topology.nodes import TableAggregateSpec, TableOperationSpec


def table_select(spec: TableOperationSpec, forward: Forward) -> Forward:
    """`KTableRepartitionMap`: `selector(key, value)` gives the `(group key, value)` of each side."""
    selector: Any = spec.fn

    def select(key: Any, value: Any) -> tuple[Any, Any] | None:
        if value is None:
            return None
        pair = selector(key, value)
        if not isinstance(pair, tuple) or len(pair) != 2:
            raise TypeError(f"group_by selector of {spec.name} must return a (key, value) tuple, got {pair!r}")
        return None if pair[0] is None or pair[1] is None else pair

    def table_select(key: Any, change: Change, _node: str = spec.name) -> None:
        try:
            if key is None:
                raise StreamsFailure("Record key for the grouping KTable should not be null.")
            new = select(key, change.new)
            old = select(key, change.old)
            if old is not None and new is not None and old[0] == new[0]:
                forward(old[0], Change(new[1], old[1]))
                return
            if old is not None:
                forward(old[0], Change(None, old[1]))
            if new is not None:
                forward(new[0], Change(new[1], None))
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return table_select


def table_aggregation(
    spec: TableAggregateSpec, forward: Forward, names: TopicNames, store: Any, graph: Graph
) -> Forward:
    """`KTableAggregate` / `KTableReduce` on `store`, a timestamped key-value store."""
    (store_name,) = spec.stores
    s = store_access(names, store_name)
    topic, key_ser, key_de, value_ser, value_de = s.topic, s.key_ser, s.key_de, s.value_ser, s.value_de
    get, put = store.get, store.put
    record = graph.record
    value_of, timestamp_of = timestamped.value_of, timestamped.timestamp_of

    # Always listen, as Kafka's aggregations always install a flush listener (see stream_aggregation._aggregation).
    def on_flush(
        key: bytes, new_value: bytes | None, old_value: bytes | None = None, timestamp: int | None = None
    ) -> None:
        k = key_de(topic, key)
        current = record.timestamp
        record.old_value = None if old_value is None else value_of(old_value)
        if new_value is not None:
            record.timestamp = timestamp_of(new_value)
        try:
            forward(k, None if new_value is None else value_de(topic, value_of(new_value)))
        finally:
            record.timestamp = current
            record.old_value = None

    store.set_flush_listener(on_flush)

    adder: Any = spec.fn
    subtractor: Any = spec.subtractor
    initializer: Any = spec.initializer
    reduce = spec.op == n.TABLE_REDUCE

    def table_aggregate(key: Any, change: Change, _node: str = spec.name) -> None:
        try:
            if key is None:
                raise StreamsFailure(
                    f"Record key for KTable aggregate operator with state {store_name} should not be null."
                )
            store_key = key_ser(topic, key)
            stored = get(store_key)
            old_agg = None if stored is None else value_de(topic, value_of(stored))
            timestamp = record.timestamp
            agg = old_agg
            if change.old is not None and old_agg is not None:
                agg = subtractor(old_agg, change.old) if reduce else subtractor(key, change.old, old_agg)
                timestamp = max(timestamp, timestamp_of(cast(bytes, stored)))
            if change.new is not None:
                if agg is None:
                    agg = change.new if reduce else adder(key, change.new, initializer())
                else:
                    agg = adder(agg, change.new) if reduce else adder(key, change.new, agg)
                if stored is not None:
                    timestamp = max(timestamp, timestamp_of(stored))
            serialized = None if agg is None else value_ser(topic, agg)
            current = record.timestamp
            record.timestamp = timestamp  # a delete written through (no cache) goes down with the result's time
            try:
                put(store_key, None if serialized is None else timestamped.encode(timestamp, serialized))
            finally:
                record.timestamp = current
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return table_aggregate

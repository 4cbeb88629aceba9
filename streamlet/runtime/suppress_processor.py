"""The suppress processor of `KTable.suppress()` (Kafka Streams' `KTableSuppressProcessor`).

Per table update: advance this processor's stream time (the largest timestamp it has seen), buffer the
update under its serialized key (see `streamlet.state.time_ordered_buffer`), then evict, oldest buffer time
first, every entry whose buffer time is at most stream time minus the suppression's wait; if the buffer is
still over its bounds, evict more (emit early) or fail (shut down). An evicted entry is forwarded with the
record context it was buffered with (so its timestamp), and for emit-final a delete is not forwarded.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, cast

from streamlet.errors import StreamsFailure, TopologyError
from streamlet.runtime.failing_node import raised_in
from streamlet.runtime.forwarding import Forward
from streamlet.runtime.record_context import RecordContext
from streamlet.runtime.task_context import TaskContext
from streamlet.runtime.topic_names import TopicNames
from streamlet.runtime.value_getters import buffer_topic
from streamlet.state.time_ordered_buffer import BufferedContext, BufferValue, TimeOrderedKeyValueBuffer
from streamlet.topology.nodes import StoreSpec, SuppressSpec
from streamlet.topology.suppressed import Suppressed

__all__ = ["build", "build_suppress"]


class Graph(Protocol):
    """What a suppress node reads of its task's graph: the record context."""

    record: RecordContext


def build(
    spec: SuppressSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: Graph
) -> Callable[..., None]:
    """The processor of a suppress node: its one store is its suppression buffer."""
    (store_name,) = spec.stores
    buffer = context.get_state_store(store_name)
    if not isinstance(buffer, TimeOrderedKeyValueBuffer):
        raise TopologyError(f"suppress node {spec.name}: store {store_name} is not a suppression buffer")
    store_spec = names.topology.stores[store_name]
    topic = buffer_topic(names, store_name)
    return build_suppress(spec.name, spec.suppress, buffer, store_spec, topic, graph.record, forward)


def build_suppress(
    node: str,
    suppressed: Suppressed,
    buffer: TimeOrderedKeyValueBuffer,
    store: StoreSpec,
    topic: str,
    record: RecordContext,
    forward: Forward,
) -> Callable[..., None]:
    """The processor function of one suppress node in one task; `topic` is what the store serdes are called with."""
    if suppressed.time_to_wait_ms is None:
        raise TopologyError(f"suppress node {node}: the wait was never resolved (a windowed table's grace)")
    wait = suppressed.time_to_wait_ms
    max_records = suppressed.buffer_config.record_limit
    max_bytes = suppressed.buffer_config.byte_limit
    emit_early = suppressed.buffer_config.when_full == "emit"
    window_close = suppressed.window_close
    key_ser = cast(Callable[[str, Any], bytes], store.key_serde.serialize)
    key_de = store.key_serde.deserialize
    value_ser = store.value_serde.serialize
    value_de = store.value_serde.deserialize
    observed = [-1]  # Kafka's observedStreamTime (NO_TIMESTAMP), in a cell for the closures

    def emit(key: bytes, value: BufferValue) -> None:
        if value.new is None and window_close:
            return  # safe to drop: emit-final never emitted anything for this window
        context = value.context
        saved = (record.topic, record.partition, record.offset, record.timestamp, record.old_value)
        record.topic, record.partition, record.offset = context.topic, context.partition, context.offset
        record.timestamp = context.timestamp
        record.old_value = value.old
        try:
            forward(key_de(topic, key), None if value.new is None else value_de(topic, value.new))
        finally:
            record.topic, record.partition, record.offset, record.timestamp, record.old_value = saved

    def over_capacity() -> bool:
        return buffer.num_records > max_records or buffer.buffer_size > max_bytes

    def suppress(key: Any, value: Any, _node: str = node) -> None:
        try:
            timestamp = record.timestamp
            if timestamp > observed[0]:
                observed[0] = timestamp
            buffer_time = key.window.end if window_close else timestamp
            context = BufferedContext(timestamp, record.offset, record.topic, record.partition)
            new = None if value is None else value_ser(topic, value)
            buffer.put(buffer_time, key_ser(topic, key), new, record.old_value, context)
            expiry = observed[0] - wait
            buffer.evict_while(lambda: buffer.min_timestamp <= expiry, emit)
            if over_capacity():
                if emit_early:
                    buffer.evict_while(over_capacity, emit)
                    return
                raise StreamsFailure(
                    f"{node} buffer exceeded its max capacity. Currently [{buffer.num_records}/{max_records}] records "
                    f"and [{buffer.buffer_size}/{max_bytes}] bytes."
                )
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return suppress

"""KStream-GlobalKTable joins (Kafka Streams' `KStreamGlobalKTableJoin`, a `KStreamKTableJoinProcessor` with a
key mapper).

Each stream record is mapped to a table key by the join's key selector and looks that key up in the global
store, which every client holds whole; so nothing is repartitioned and the record keeps its key, value
partitioning and timestamp. Kafka's null rules (`maybeDropRecord`): a record with a null value is dropped,
and so is one whose key maps to null, except in a left join, which joins it with null. The key selector sees
every record, null values included, as Kafka's does.
"""

from __future__ import annotations

from typing import Any

from streamlet.runtime.failing_node import raised_in
from streamlet.runtime.forwarding import Forward
from streamlet.runtime.ktable_processors import TaskProcessorGraph
from streamlet.runtime.topic_names import TopicNames
from streamlet.runtime.value_getters import TaskContext, value_getter
from streamlet.topology import nodes as n
from streamlet.topology.nodes import GlobalTableJoinSpec


def build(
    spec: GlobalTableJoinSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: TaskProcessorGraph
) -> Forward:
    """The processor of a stream-global table join (an op of `nodes.GLOBAL_TABLE_JOIN_OPS`)."""
    assert spec.fn is not None
    get = value_getter(spec.value_getter, names, context)
    key_mapper = spec.key_mapper
    joiner: Any = spec.fn
    left = spec.op == n.STREAM_GLOBAL_TABLE_LEFT_JOIN

    def global_table_join(key: Any, value: Any, _node: str = spec.name) -> None:
        try:
            table_key = key_mapper(key, value)
            if value is None or (table_key is None and not left):
                graph.dropped.null_key_or_value(_node, graph.record)
                return
            table_value = None if table_key is None else get(table_key)
            if left or table_value is not None:
                forward(key, joiner(value, table_value))
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return global_table_join

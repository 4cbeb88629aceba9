"""Which builder makes the processor of each operation: the registry `processor_graph` looks a node up in.

A builder takes the node's spec, its children's forward, the application's topic names, the task's context and
its graph, and returns the node's forward. Each family of operations has its builder in the module of its
processors; this module only says which is which.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from streamlet.errors import TopologyError
from streamlet.runtime import (
    global_table_join,
    ktable_processors,
    stream_aggregation,
    stream_join,
    stream_processors,
    suppress_processor,
)
from streamlet.runtime.dropped_records import DroppedRecords
from streamlet.runtime.forwarding import Forward
from streamlet.runtime.pre_aggregate import pre_aggregate_node
from streamlet.runtime.punctuation import TaskPunctuations
from streamlet.runtime.record_context import RecordContext
from streamlet.runtime.task_context import TaskContext
from streamlet.runtime.topic_names import TopicNames
from streamlet.task_id import TaskId
from streamlet.topology import nodes as n
from streamlet.topology.nodes import ProcessorSpec

__all__ = ["NodeGraph", "build_processor"]


class NodeGraph(Protocol):
    """What the builders, together, read of a task's `TaskProcessorGraph` (each declares its own part)."""

    task_id: TaskId
    record: RecordContext
    dropped: DroppedRecords
    punctuations: TaskPunctuations
    stream_time: int
    join_trackers: dict[str, stream_join.TimeTracker]
    join_emit_interval_ms: int

    def add_flusher(self, flush: Callable[[], None]) -> None: ...


Builder = Callable[[ProcessorSpec, Forward, TopicNames, TaskContext, NodeGraph], Forward]


def _pre_aggregate(
    spec: ProcessorSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: NodeGraph
) -> Forward:
    return pre_aggregate_node(spec, forward, graph)


def _registry() -> dict[str, Builder]:
    families: list[tuple[frozenset[str], Builder]] = [
        (stream_processors.OPS, stream_processors.build),
        (frozenset({n.PROCESS}), stream_processors.process),
        (frozenset({n.PREAGGREGATE}), _pre_aggregate),
        (frozenset({n.SUPPRESS}), suppress_processor.build),
        (n.AGGREGATING_OPS, stream_aggregation.build),
        (n.TABLE_OPS, ktable_processors.build),
        (n.GLOBAL_TABLE_JOIN_OPS, global_table_join.build),
        (n.STREAM_JOIN_OPS, stream_join.build),
    ]
    return {op: build for ops, build in families for op in ops}


_BUILDERS = _registry()


def build_processor(
    spec: ProcessorSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: NodeGraph
) -> Forward:
    """The processor of `spec` in one task, forwarding to `forward` (its children)."""
    build = _BUILDERS.get(spec.op)
    if build is None:
        raise TopologyError(f"unknown processor operation {spec.op!r} in node {spec.name}")
    return build(spec, forward, names, context, graph)

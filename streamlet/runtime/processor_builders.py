"""Which builder makes the processor of each operation: the registry `processor_graph` looks a node up in.

A builder takes the node's spec, its children's forward, the application's topic names, the task's context and
its graph, and returns the node's forward. Each family of operations has its builder in the module of its
processors; this module only says which is which.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

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

    def forward_failed(self, exc: Exception) -> None: ...


S = TypeVar("S", bound=ProcessorSpec)

#: (spec, its children's forward, the topic names, the task's context, its graph) -> the node's forward
Builder = Callable[[S, Forward, TopicNames, TaskContext, NodeGraph], Forward]


def _pre_aggregate(
    spec: n.PreAggregateSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: NodeGraph
) -> Forward:
    return pre_aggregate_node(spec, forward, graph)


def _entry(kind: type[S], build: Builder[S]) -> tuple[type[ProcessorSpec], Builder[Any]]:
    """One registry entry: typed so that a builder can only be registered for the specs it takes."""
    return kind, build


#: spec type -> builder (a branch node is wired by `processor_graph` itself: it forwards to one child by name)
_BUILDERS: dict[type[ProcessorSpec], Builder[Any]] = dict(
    [
        _entry(n.StreamOperationSpec, stream_processors.build),
        _entry(n.ProcessSpec, stream_processors.process),
        _entry(n.PreAggregateSpec, _pre_aggregate),
        _entry(n.SuppressSpec, suppress_processor.build),
        _entry(n.AggregateSpec, stream_aggregation.build),
        _entry(n.TableOperationSpec, ktable_processors.table_operation),
        _entry(n.TableAggregateSpec, ktable_processors.grouped_table_aggregation),
        _entry(n.StreamTableJoinSpec, ktable_processors.stream_table_join),  # takes stream records
        _entry(n.TableJoinSpec, ktable_processors.table_join),
        _entry(n.ForeignKeyJoinNodeSpec, ktable_processors.foreign_key_join_node),
        _entry(n.GlobalTableJoinSpec, global_table_join.build),
        _entry(n.StreamStreamJoinSpec, stream_join.build),
    ]
)


def build_processor(
    spec: ProcessorSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: NodeGraph
) -> Forward:
    """The processor of `spec` in one task, forwarding to `forward` (its children)."""
    build = _BUILDERS.get(type(spec))
    if build is None:
        raise TopologyError(f"no processor builder for {type(spec).__name__} (node {spec.name}, {spec.op!r})")
    return build(spec, forward, names, context, graph)

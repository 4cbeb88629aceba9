"""The stateless KStream processors (Kafka Streams' `KStreamFilter`, `KStreamMapValues`, `KStreamFlatMap`,
`KStreamPeek`, `KStreamProcessor`, ...), one builder per operation.

Each node is a closure calling its child's forward directly; it carries its name as the default of its
`_node` parameter and marks the errors raised in it (`streamlet.runtime.failing_node`), which costs nothing
per record and names the processor whose user function raised.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from streamlet.errors import TopologyError
from streamlet.runtime.dropped_records import DroppedRecords
from streamlet.runtime.failing_node import raised_in
from streamlet.runtime.forwarding import Forward
from streamlet.runtime.processor_context import ProcessorContext
from streamlet.runtime.punctuation import TaskPunctuations
from streamlet.runtime.record_context import RecordContext
from streamlet.runtime.task_context import TaskContext
from streamlet.runtime.topic_names import TopicNames
from streamlet.topology import nodes as n
from streamlet.topology.nodes import ProcessSpec, StreamOperationSpec

__all__ = ["build", "process"]


class Graph(Protocol):
    """What a user processor's context reads of its task's graph."""

    record: RecordContext
    punctuations: TaskPunctuations
    dropped: DroppedRecords
    stream_time: int


def _filter(node: str, fn: Any, forward: Forward) -> Forward:
    def filter_(key: Any, value: Any, _node: str = node) -> None:
        try:
            if fn(key, value):
                forward(key, value)
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return filter_


def _filter_not(node: str, fn: Any, forward: Forward) -> Forward:
    def filter_not(key: Any, value: Any, _node: str = node) -> None:
        try:
            if not fn(key, value):
                forward(key, value)
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return filter_not


def _map_values(node: str, fn: Any, forward: Forward) -> Forward:
    def map_values(key: Any, value: Any, _node: str = node) -> None:
        try:
            forward(key, fn(value))
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return map_values


def _flat_map_values(node: str, fn: Any, forward: Forward) -> Forward:
    def flat_map_values(key: Any, value: Any, _node: str = node) -> None:
        try:
            for item in fn(value):
                forward(key, item)
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return flat_map_values


def _map(node: str, fn: Any, forward: Forward) -> Forward:
    def map_(key: Any, value: Any, _node: str = node) -> None:
        try:
            new_key, new_value = fn(key, value)
            forward(new_key, new_value)
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return map_


def _flat_map(node: str, fn: Any, forward: Forward) -> Forward:
    def flat_map(key: Any, value: Any, _node: str = node) -> None:
        try:
            for new_key, new_value in fn(key, value):
                forward(new_key, new_value)
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return flat_map


def _select_key(node: str, fn: Any, forward: Forward) -> Forward:
    def select_key(key: Any, value: Any, _node: str = node) -> None:
        try:
            forward(fn(key, value), value)
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return select_key


def _peek(node: str, fn: Any, forward: Forward) -> Forward:
    def peek(key: Any, value: Any, _node: str = node) -> None:
        try:
            fn(key, value)
            forward(key, value)
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return peek


def _foreach(node: str, fn: Any, forward: Forward) -> Forward:
    def foreach(key: Any, value: Any, _node: str = node) -> None:
        try:
            fn(key, value)
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return foreach


def _repartition_filter(node: str, fn: Any, forward: Forward) -> Forward:
    """Null keys are dropped before a repartition topic, as in Kafka Streams."""

    def repartition_filter(key: Any, value: Any, _node: str = node) -> None:
        try:
            if key is not None:
                forward(key, value)
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return repartition_filter


def _pass_through(node: str, fn: Any, forward: Forward) -> Forward:
    """merge(), a split's branch, toStream() of an aggregation (whose flush listener already forwards
    `(key, new value)`): the node is its children's forward."""
    return forward


#: operation -> builder(node name, user function, forward)
_BUILDERS: dict[str, Callable[[str, Any, Forward], Forward]] = {
    n.FILTER: _filter,
    n.FILTER_NOT: _filter_not,
    n.MAP_VALUES: _map_values,
    n.FLAT_MAP_VALUES: _flat_map_values,
    n.MAP: _map,
    n.FLAT_MAP: _flat_map,
    n.SELECT_KEY: _select_key,
    n.PEEK: _peek,
    n.FOREACH: _foreach,
    n.REPARTITION_FILTER: _repartition_filter,
    n.TO_STREAM: _pass_through,
    n.PASS_THROUGH: _pass_through,
}


def build(
    spec: StreamOperationSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: Graph
) -> Forward:
    """The processor of a stateless stream operation (one of `StreamOperationSpec.OPS`)."""
    return _BUILDERS[spec.op](spec.name, spec.fn, forward)


def process(spec: ProcessSpec, forward: Forward, names: TopicNames, context: TaskContext, graph: Graph) -> Forward:
    """A user processor (`KStream.process`): its factory makes one processor per task, given the node's context."""
    fn: Any = spec.fn
    processor_context = ProcessorContext(spec.name, context, graph.record, graph.punctuations, forward, graph)
    processor = fn(processor_context)  # one processor instance per task
    if not callable(processor):
        raise TopologyError(f"processor factory of node {spec.name} returned {processor!r}, not a callable")

    def process(key: Any, value: Any, _node: str = spec.name) -> None:
        try:
            processor(key, value)
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return process

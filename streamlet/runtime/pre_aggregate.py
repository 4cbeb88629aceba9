"""The pre-aggregation node of a task (see `streamlet.topology.pre_aggregation`).

It keeps one partial aggregate per key, with the largest timestamp of the records folded into it, and forwards
them (to the repartition sink) when the task flushes, i.e. at every commit before the producer is flushed and
the input offsets are committed, so a committed offset never covers a partial that was not sent. It also
forwards them early once it holds `MAX_PARTIAL_KEYS` keys.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from streamlet.errors import TopologyError
from streamlet.runtime.dropped_records import DroppedRecords
from streamlet.runtime.failing_node import raised_in
from streamlet.runtime.forwarding import Forward
from streamlet.runtime.record_context import RecordContext
from streamlet.topology.nodes import PreAggregateSpec
from streamlet.topology.pre_aggregation import MAX_PARTIAL_KEYS, NO_PARTIAL


class _Graph(Protocol):
    record: RecordContext
    dropped: DroppedRecords

    def add_flusher(self, flush: Callable[[], None]) -> None: ...

    def forward_failed(self, exc: Exception) -> None: ...


def pre_aggregate_node(
    spec: PreAggregateSpec, forward: Forward, graph: _Graph, max_keys: int = MAX_PARTIAL_KEYS
) -> Forward:
    """Compile the node; its flush is registered with `graph.add_flusher`."""
    fold: Any = spec.fn
    record = graph.record
    partials: dict[Any, list[Any]] = {}  # key -> [partial, largest timestamp]

    def flush() -> None:
        if not partials:
            return
        entries = list(partials.items())
        partials.clear()
        current = record.timestamp
        try:
            for key, (partial, timestamp) in entries:
                record.timestamp = timestamp
                try:
                    forward(key, partial)
                except Exception as exc:  # the handler's: it raises, or drops this partial and the rest go on
                    graph.forward_failed(exc)
        finally:
            record.timestamp = current

    def pre_aggregate(key: Any, value: Any, _node: str = spec.name) -> None:
        try:
            if key is None:
                return  # the repartition filter would drop it
            if value is None:
                graph.dropped.null_key_or_value(_node, graph.record)
                return
            try:
                entry = partials.get(key)
            except TypeError:
                raise TopologyError(
                    f"pre-aggregation {spec.name} keeps partials by key, and a {type(key).__name__} key is not "
                    "hashable: give the grouping a hashable key, or aggregate without pre-aggregation"
                ) from None
            if entry is None:
                partials[key] = [fold(key, NO_PARTIAL, value), record.timestamp]
                if len(partials) >= max_keys:
                    flush()
                return
            entry[0] = fold(key, entry[0], value)
            if record.timestamp > entry[1]:
                entry[1] = record.timestamp
        except Exception as exc:
            raised_in(exc, _node)
            raise

    graph.add_flusher(flush)
    return pre_aggregate

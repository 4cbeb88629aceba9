"""KTable-KTable joins: Kafka Streams' `KTableKTableInnerJoin`, `LeftJoin`, `RightJoin`, `OuterJoin` and the
`KTableKTableJoinMerger` (which writes the result to its store when the join is materialized).

Each side's update looks up the other side's current value (its value getter, with its timestamp) and
forwards the joined `Change(new, old)` under the larger of the two timestamps; the merger forwards what
either side produced. An inner join emits nothing while the other side lacks the key; a left join's left
side joins with None, while its right side (the right join, with the joiner reversed) emits only when the
left side has the key, and then even for a delete (the joiner gets None); an outer join joins with None on
both sides. Old values are joined only when a downstream table asked for them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlet.runtime.aggregate_functions import Graph
from streamlet.runtime.failing_node import raised_in
from streamlet.runtime.forwarding import Forward
from streamlet.runtime.record_context import RecordContext
from streamlet.topology import nodes as n
from streamlet.topology.change import Change
from streamlet.topology.nodes import TableJoinSpec

Getter = Callable[[Any], tuple[Any, int] | None]  # a table's value getter: (value, timestamp) of a key


def forward_at(record: RecordContext, forward: Forward, key: Any, value: Any, timestamp: int) -> None:
    """Forward a join result under `timestamp` (the larger of its two sides'), then restore the record's."""
    current = record.timestamp
    record.timestamp = timestamp
    try:
        forward(key, value)
    finally:
        record.timestamp = current


def table_table_join(spec: TableJoinSpec, forward: Forward, get: Getter, graph: Graph) -> Forward:
    """One side of a table-table join (`spec.op`), reading the other side with `get`."""
    joiner: Any = spec.fn
    send_old = spec.send_old_values
    record = graph.record
    op = spec.op

    def emit(key: Any, new: Any, old: Any, timestamp: int) -> None:
        forward_at(record, forward, key, Change(new, old), timestamp)

    def table_table_join(key: Any, change: Change, _node: str = spec.name) -> None:
        try:
            if key is None:
                graph.dropped.null_key_or_value(_node, graph.record)
                return
            found = get(key)
            if found is None:
                if op in (n.TABLE_JOIN_INNER, n.TABLE_JOIN_RIGHT) or (change.new is None and change.old is None):
                    return
                other, timestamp = None, record.timestamp
            else:
                other, timestamp = found[0], max(record.timestamp, found[1])
            if op == n.TABLE_JOIN_RIGHT:  # the right side of a left join: the left side's value is there
                emit(key, joiner(change.new, other), joiner(change.old, other) if send_old else None, timestamp)
                return
            outer = op == n.TABLE_JOIN_OUTER and other is not None
            new = joiner(change.new, other) if change.new is not None or outer else None
            old = joiner(change.old, other) if send_old and (change.old is not None or outer) else None
            emit(key, new, old, timestamp)
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return table_table_join


def join_merger(
    spec: TableJoinSpec, forward: Forward, write: Callable[[Any, Any], None] | None, direct_old: list[Any] | None
) -> Forward:
    """`KTableKTableJoinMerger`: either side's result, its old value only if asked for; with `write` (its
    store's writer, which forwards what it stores) materialized. The forwarded old value is then the stored one
    when a cache flushes, and the join's own (put in `direct_old`) when the write goes straight through."""
    if write is not None:
        assert direct_old is not None

        def materialized_merge(key: Any, change: Change, _node: str = spec.name) -> None:
            try:
                direct_old[0] = change.old
                write(key, change.new)
            except Exception as exc:
                raised_in(exc, _node)
                raise

        return materialized_merge
    if spec.send_old_values:
        return forward

    def merge(key: Any, change: Change, _node: str = spec.name) -> None:
        try:
            forward(key, Change(change.new, None))
        except Exception as exc:
            raised_in(exc, _node)
            raise

    return merge

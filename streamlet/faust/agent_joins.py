"""Faust-style joins of an agent's stream, compiled to Kafka Streams' joins of the DSL.

Faust's `Stream.join` / `left_join` / `outer_join` were stubs; streamlet's follow Kafka Streams underneath:

- `stream.join(table)` with a `KTable` (`app.table(topic)`): each record looks up the table's current value
  for its key (`KStream#join(KTable)`); the topics must be co-partitioned, as the DSL requires.
- `stream.join(global_table, key=...)` with Faust's `app.GlobalTable` or a DSL `GlobalKTable`: the table key
  is `key(value)` (a Record field such as `Order.customer`, or a function), else the record's own key; no
  co-partitioning (`KStream#join(GlobalKTable, ...)`).
- `stream.join(other, within=...)` with another stream (an `app.topic(...)` or a DSL `KStream`): records of the
  same key at most `within` apart join (`JoinWindows`, with `grace`), both ways.

Values become `(value, other_value)` pairs, or `joiner(value, other_value)`; a left or outer join gives None
for a missing side. This module turns the Faust-style arguments into the DSL's.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

from streamlet.errors import TopologyError
from streamlet.faust.global_tables import GlobalTable
from streamlet.faust.tables import Table
from streamlet.faust.topic_ref import TopicRef
from streamlet.topology import GlobalKTable, KStream, KTable
from streamlet.topology.join_windows import JoinWindows

__all__ = ["Seconds", "check_joinable", "global_ktable", "join_windows", "pair", "table_key_selector"]

Seconds = float | int | timedelta


def pair(value: Any, other_value: Any) -> tuple[Any, Any]:
    """The default joiner: both values, as Faust-style code unpacks them (`async for order, customer in ...`)."""
    return (value, other_value)


def _millis(value: Seconds, what: str) -> int:
    seconds = value.total_seconds() if isinstance(value, timedelta) else value
    if isinstance(seconds, bool) or not isinstance(seconds, int | float) or seconds < 0:
        raise TopologyError(f"{what} must be a non-negative number of seconds or a timedelta, got {value!r}")
    return round(seconds * 1000)


def join_windows(within: Seconds | JoinWindows | None, grace: Seconds | None, where: str) -> JoinWindows:
    """`within` seconds either way (or Kafka's `JoinWindows` as they are), with `grace` seconds for late records
    (default none: Kafka's `ofTimeDifferenceWithNoGrace`)."""
    if within is None:
        raise TopologyError(f"{where}: a stream-stream join needs within= (seconds, a timedelta or JoinWindows)")
    if isinstance(within, JoinWindows):
        if grace is not None:
            raise TopologyError(f"{where}: give the grace period in the JoinWindows, not as grace=")
        return within
    difference = _millis(within, f"{where}: within")
    grace_ms = 0 if grace is None else _millis(grace, f"{where}: grace")
    return JoinWindows.of_time_difference_and_grace(difference, grace_ms)


def global_ktable(table: GlobalTable | GlobalKTable, where: str) -> GlobalKTable:
    """The DSL's GlobalKTable behind Faust's GlobalTable (made when the App compiles its topology)."""
    if isinstance(table, GlobalKTable):
        return table
    if table.ktable is None:
        raise TopologyError(f"{where}: global table {table.name} is not part of this App's topology")
    return table.ktable


def table_key_selector(key: Callable[[Any], Any] | None) -> Callable[[Any, Any], Any]:
    """Kafka's `KeyValueMapper` for a global table join: `key(value)`, or the record's key when none is given."""
    if key is None:
        return lambda record_key, _value: record_key
    if not callable(key):
        raise TopologyError(f"key= must be a Record field or a function of the value, got {key!r}")
    return lambda _record_key, value: key(value)


def check_joinable(other: object, where: str) -> None:
    """Refuse what cannot be joined, saying what can."""
    if isinstance(other, Table) and not isinstance(other, GlobalTable):
        raise TopologyError(
            f"{where}: app.Table {other.name} is an agent's store, not a changelog stream: join a KTable of a "
            "topic (app.table(topic)), an app.GlobalTable, or another stream"
        )
    if not isinstance(other, KTable | KStream | GlobalKTable | GlobalTable | TopicRef):
        raise TopologyError(
            f"{where}: cannot join {other!r}: join a KTable (app.table), a global table (app.GlobalTable, "
            "builder.global_table), or a stream (app.topic(...), app.stream(...))"
        )

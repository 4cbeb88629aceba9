"""Source KTables and KTable operations of the DSL (Kafka Streams' `StreamsBuilder#table`, `KTableImpl`).

A table made here forwards Kafka's `Change(new, old)` values (see `streamlet.runtime.ktable_processors`),
and remembers what Kafka Streams decides lazily about it:

* whether its source is materialized. `builder.table(topic)` without a store name always takes a store
  name (`<topic>-STATE-STORE-<n>`, burning a counter value as Kafka's `MaterializedInternal` does) but only
  gets a store when something needs to read the table, such as a join (`KTableSource#materialize`);
* whether it sends old values. A filter asks its parent for them at creation (`enableSendingOldValues(false)`)
  and gets them only from a materialized source; without them a non-materialized filter forwards a tombstone
  for every record it filters out, as Kafka's does.

Both are read when the topology is written (`build()`), as Kafka's graph nodes read them. The DSL methods
that create these tables are in `streamlet.topology.builder`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from streamlet.topology.nodes import SUPPRESS, SuppressGetterSpec, TableJoinGetterSpec, ValueGetterSpec

TABLE_SOURCE_NAME = "KTABLE-SOURCE-"
TABLE_FILTER_NAME = "KTABLE-FILTER-"
TABLE_MAPVALUES_NAME = "KTABLE-MAPVALUES-"
TABLE_SOURCE_SUFFIX = "-source"
TABLE_SELECT_NAME = "KTABLE-SELECT-"
TABLE_AGGREGATE_NAME = "KTABLE-AGGREGATE-"
TABLE_REDUCE_NAME = "KTABLE-REDUCE-"
TABLE_MERGE_NAME = "KTABLE-MERGE-"
TABLE_JOINTHIS_NAME = "KTABLE-JOINTHIS-"
TABLE_JOINOTHER_NAME = "KTABLE-JOINOTHER-"


# count() of a grouped table is an aggregate (KGroupedTableImpl's countInitializer, countAdder, countSubtractor)
def count_initializer() -> int:
    return 0


def count_adder(key: Any, value: Any, aggregate: int) -> int:
    return aggregate + 1


def count_subtractor(key: Any, value: Any, aggregate: int) -> int:
    return aggregate - 1


class TableSource:
    """The source of a table chain: its store, and what Kafka's `KTableSource` decides about it."""

    __slots__ = ("store_name", "materialized", "send_old_values")

    def __init__(self, store_name: str, materialized: bool) -> None:
        self.store_name = store_name
        self.materialized = materialized
        self.send_old_values = False


class TableState:
    """A KTable (of `table()`, a table operation, an aggregation, a join or a suppression): its source, its
    parent and its own operation."""

    __slots__ = ("source", "parent", "op", "fn", "store", "send_old_values", "aggregation", "joined", "view")

    def __init__(
        self,
        source: TableSource,
        parent: TableState | None,
        op: str,
        fn: Callable[..., Any] | None,
        store: str | None = None,
    ) -> None:
        self.source = source
        self.parent = parent
        self.op = op
        self.fn = fn
        self.store = store  # a materialized filter / mapValues has its own store, an aggregation its own
        self.send_old_values = False
        self.aggregation = False  # the table of an aggregation (KTableAggregate, KStreamAggregate, ...)
        self.joined: tuple[TableState, TableState] | None = None  # a table-table join's two tables
        self.view: ValueGetterSpec | None = None  # how a storeless join or a suppressed table is read

    def enable_sending_old_values(self, force_materialization: bool) -> bool:
        """`KTableImpl#enableSendingOldValues`: True if this table now forwards old values."""
        if self.send_old_values:
            return True
        if self.joined is not None:  # KTableKTableJoinMerger: both sides, materialized (before its own store)
            for side in self.joined:
                side.enable_sending_old_values(True)
            self.send_old_values = True
            return True
        if self.store is not None:  # its own store knows the old values
            self.send_old_values = True
            return True
        if self.parent is None:
            source = self.source
            if not force_materialization and not source.materialized:
                return False
            source.materialized = True
            source.send_old_values = True
        elif not self.parent.enable_sending_old_values(force_materialization):
            return False
        self.send_old_values = True
        return True

    def value_getter(self) -> ValueGetterSpec:
        """How joins read this table: its nearest store (the source's, now materialized, or a materialized
        operation's), then the operations down to it."""
        steps: list[tuple[str, Callable[..., Any]]] = []
        state = self
        while state.store is None and state.view is None and state.parent is not None:
            assert state.fn is not None
            steps.append((state.op, state.fn))
            state = state.parent
        if state.store is not None:
            return ValueGetterSpec(state.store, tuple(reversed(steps)))
        if state.view is not None:  # an unmaterialized join, or a suppressed table: see ValueGetterSpec
            return replace(state.view, steps=tuple(reversed(steps)))
        self.source.materialized = True
        return ValueGetterSpec(self.source.store_name, tuple(reversed(steps)))


def aggregation_state(store: str) -> TableState:
    """The table of a count / reduce / aggregate in `store`: like a materialized operation, it gives old values
    whenever a downstream table asks (Kafka's `KTableProcessorSupplier#enableSendingOldValues` and
    `KStreamAggProcessorSupplier#enableSendingOldValues`), and joins read its store."""
    state = TableState(TableSource(store, materialized=True), None, "aggregation", None, store)
    state.aggregation = True
    return state


def join_state(
    merge_name: str, this: TableState, other: TableState, store: str | None, getter: TableJoinGetterSpec
) -> TableState:
    """The table of a table-table join (with its own store if materialized); old values come from both sides,
    and without a store, its value is `getter`'s join of the two tables' values."""
    state = TableState(TableSource(merge_name, materialized=False), None, "join", None, store)
    state.joined = (this, other)
    state.view = ValueGetterSpec(getter.this.store, join=getter)
    return state


def suppressed_state(parent: TableState, buffer: str) -> TableState:
    """The table of `suppress()`: its updates come out of the buffer, old values as its parent sends them (which
    the buffer needs, so they are enabled: Kafka's `KTableSuppressProcessorSupplier`), and it is read through
    the buffer, then the parent."""
    parent.enable_sending_old_values(True)
    state = TableState(parent.source, parent, SUPPRESS, None)
    state.view = ValueGetterSpec(buffer, suppressed=SuppressGetterSpec(buffer, parent.value_getter()))
    return state

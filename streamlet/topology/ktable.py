"""Source KTables and KTable operations of the DSL (Kafka Streams' `StreamsBuilder#table`, `KTableImpl`).

A table made here forwards Kafka's `Change(new, old)` values (see `streamlet.runtime.ktable_processors`),
and remembers what Kafka Streams decides lazily about it:

* whether its source is materialized. `builder.table(topic)` without a store name always takes a store
  name (`<topic>-STATE-STORE-<n>`, burning a counter value as Kafka's `MaterializedInternal` does) but only
  gets a store when something needs to read the table, such as a join (`KTableSource#materialize`);
* whether it sends old values. A filter asks its parent for them at creation (`enableSendingOldValues(false)`)
  and gets them only from a materialized source; without them a non-materialized filter forwards a tombstone
  for every record it filters out, as Kafka's does.

Both are read when the topology is written (`build()`), as Kafka's graph nodes read them. `KTableBase` is a
table and its own operations (filter, map_values, suppress); `StreamsBuilder.table` (`builder`), aggregations
(`kgrouped_stream`, `kgrouped_table`) and joins (`joins`, `foreign_key_joins`) make the others, and the DSL's
`KTable` (`dsl`) adds what turns a table into another type.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any, Self, TypeVar

from streamlet.errors import TopologyError
from streamlet.serdes import Serde, SerdeLike
from streamlet.topology import nodes as n
from streamlet.topology.dsl_graph import (
    SUPPRESS_NAME,
    GraphNode,
    InternalStreamsBuilder,
    InternalTopologyBuilder,
    first_serde,
    or_default,
    require_callable,
    serde_arg,
    typed_serde,
)
from streamlet.topology.nodes import (
    SUPPRESS,
    StoreSpec,
    SuppressGetterSpec,
    SuppressSpec,
    TableJoinGetterSpec,
    TableOperationSpec,
    ValueGetterSpec,
    validate_name,
)
from streamlet.topology.suppressed import Suppressed

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


T = TypeVar("T", bound="KTableBase")


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


class KTableBase:
    """What a KTable is and what it does to itself (filter, map_values, suppress): `streamlet.topology.dsl.KTable`
    adds what makes other DSL types and joins. Every operation here returns a table of the caller's class.

    Every table carries its `_state` (a `TableState`): how it is read, whether it sends old values, and what it
    was made by (a source, an operation, an aggregation, a join or a suppression). The aggregation and join
    modules return a plain `KTableBase`, which the DSL's `KTable` takes on (`of`).
    """

    __slots__ = ("_builder", "_node", "_key_serde", "_value_serde", "_store_name", "_state", "_grace_ms")

    def __init__(
        self,
        builder: InternalStreamsBuilder,
        node: GraphNode,
        key_serde: Serde | None,
        value_serde: Serde | None,
        store_name: str,
        state: TableState,
        *,
        grace_ms: int | None = None,
    ) -> None:
        self._builder = builder
        self._node = node
        self._key_serde = key_serde
        self._value_serde = value_serde
        self._store_name = store_name
        self._grace_ms = grace_ms  # a windowed table's grace period: when its windows close
        self._state = state

    @classmethod
    def of(cls, table: KTableBase) -> Self:
        """`table` as an instance of this class (the same builder, node, serdes, store and state)."""
        return cls(
            table._builder,
            table._node,
            table._key_serde,
            table._value_serde,
            table._store_name,
            table._state,
            grace_ms=table._grace_ms,
        )

    @property
    def store_name(self) -> str:
        return self._store_name

    @property
    def node_name(self) -> str:
        return self._node.name

    def filter(
        self,
        predicate: Callable[[Any, Any], bool],
        *,
        name: str | None = None,
        store_name: str | None = None,
        value_serde: SerdeLike = None,
    ) -> Self:
        """The rows for which `predicate(key, value)` holds; a row filtered out becomes a delete.

        `store_name` materializes the result (Kafka's `Materialized.as`), with `value_serde` (default: this
        table's); a materialized filter forwards no delete for a key it never held.
        """
        return _filter_table(self, predicate, False, name, store_name, value_serde)

    def filter_not(
        self,
        predicate: Callable[[Any, Any], bool],
        *,
        name: str | None = None,
        store_name: str | None = None,
        value_serde: SerdeLike = None,
    ) -> Self:
        """The rows for which `predicate(key, value)` does not hold; the others become deletes."""
        return _filter_table(self, predicate, True, name, store_name, value_serde)

    def map_values(
        self,
        mapper: Callable[[Any], Any],
        *,
        name: str | None = None,
        store_name: str | None = None,
        value_serde: SerdeLike = None,
    ) -> Self:
        """`mapper(value)` per row (never called for a delete, which stays a delete).

        `store_name` materializes the result, its values written with `value_serde` (default: the serde of
        the mapper's annotated return type, else bytes).
        """
        return _map_values_table(self, mapper, name, store_name, value_serde)

    def suppress(self, suppressed: Suppressed) -> Self:
        """Hold back updates until they are due (Kafka's `KTable#suppress`): see `streamlet.topology.suppressed`.

        The processor is `KTABLE-SUPPRESS-<n>` (or the `with_name` name) and its buffer the store
        `KTABLE-SUPPRESS-STATE-STORE-<n>` (or `<name>-store`), change-logged unless its buffer config is
        `with_logging_disabled()`; the result is a table of the same keys and values, whose updates come out
        of the buffer.
        """
        if not isinstance(suppressed, Suppressed):
            raise TopologyError(f"suppress() takes a Suppressed, got {suppressed!r}")
        state = self._state
        if not state.aggregation and state.op != n.SUPPRESS:
            raise TopologyError(f"suppress() of {self!r}, which is not an aggregation's table, is not supported yet")
        builder = self._builder
        given = suppressed.name
        if given is not None:
            validate_name(given, "Suppress name")
        name = given if given is not None else builder.new_processor_name(SUPPRESS_NAME)
        if suppressed.window_close:
            if self._grace_ms is None:
                raise TopologyError(
                    "until_window_closes() is only defined for windowed computations: suppress a table of "
                    f"windowed_by(...) aggregates, not {self!r}"
                )
            suppressed = replace(suppressed, time_to_wait_ms=self._grace_ms)
        store = given + "-store" if given is not None else builder.new_store_name(SUPPRESS_NAME)
        builder.claim(name)
        builder.claim_store(store)
        store_spec = StoreSpec(
            store,
            or_default(self._key_serde),
            or_default(self._value_serde),
            buffer=True,
            logged=suppressed.buffer_config.logging_enabled,
            log_config=suppressed.buffer_config.log_config,
        )

        def write(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
            topology.add(SuppressSpec(name, parents, stores=(store,), suppress=suppressed))
            topology.add_store(store_spec, name)

        node = GraphNode(name, write)
        builder.add_graph_node(self._node, node)
        result = suppressed_state(state, store)
        return type(self)(builder, node, self._key_serde, self._value_serde, store, result, grace_ms=self._grace_ms)

    def __repr__(self) -> str:
        return f"KTable({self._node.name}, store={self._store_name})"


def _filter_table(
    table: T,
    predicate: Callable[[Any, Any], bool],
    filter_not: bool,
    name: str | None,
    store_name: str | None,
    value_serde: SerdeLike,
) -> T:
    """`KTable#filter` / `#filterNot`: a KTABLE-FILTER node, with its own store if `store_name` is given."""
    require_callable(predicate, "filter predicate")
    parent = table._state
    internal = table._builder
    vs = first_serde(serde_arg(value_serde, "value_serde"), table._value_serde)
    store = table_store_name(internal, store_name)
    node_name = internal.name_or_generate(name, TABLE_FILTER_NAME)
    op = n.TABLE_FILTER_NOT if filter_not else n.TABLE_FILTER
    state = TableState(parent.source, parent, op, predicate, store)
    # KTableFilter's constructor: old values if the parent can give them without materializing
    state.send_old_values = parent.enable_sending_old_values(False)
    node = _table_node(internal, table._node, node_name, state, table._key_serde, vs)
    return type(table)(internal, node, table._key_serde, vs, store or table.store_name, state)


def _map_values_table(
    table: T, mapper: Callable[[Any], Any], name: str | None, store_name: str | None, value_serde: SerdeLike
) -> T:
    """`KTable#mapValues`: a KTABLE-MAPVALUES node (a null value stays null), with its own store if asked."""
    require_callable(mapper, "map_values mapper")
    parent = table._state
    internal = table._builder
    vs = first_serde(serde_arg(value_serde, "value_serde"), typed_serde(mapper, None))
    store = table_store_name(internal, store_name)
    node_name = internal.name_or_generate(name, TABLE_MAPVALUES_NAME)
    state = TableState(parent.source, parent, n.TABLE_MAP_VALUES, mapper, store)
    node = _table_node(internal, table._node, node_name, state, table._key_serde, vs)
    return type(table)(internal, node, table._key_serde, vs, store or table.store_name, state)


def table_store_name(internal: InternalStreamsBuilder, store_name: str | None) -> str | None:
    if store_name is None:
        return None
    validate_name(store_name, "Store name")
    internal.claim_store(store_name)
    return store_name


def _table_node(
    internal: InternalStreamsBuilder,
    parent: GraphNode,
    name: str,
    state: TableState,
    key_serde: Serde | None,
    value_serde: Serde | None,
) -> GraphNode:
    internal.claim(name)
    store = state.store

    def write(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
        stores = () if store is None else (store,)
        spec = TableOperationSpec(
            name, parents, state.op, stores=stores, fn=state.fn, send_old_values=state.send_old_values
        )
        topology.add(spec)
        if store is not None:
            store_spec = StoreSpec(store, or_default(key_serde), or_default(value_serde), timestamped=True)
            topology.add_store(store_spec, name)

    node = GraphNode(name, write)
    internal.add_graph_node(parent, node)
    return node

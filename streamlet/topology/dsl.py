"""The DSL's types, which return one another: `KStream`, `KGroupedStream`, the windowed streams, `KTable`,
`KGroupedTable` (Kafka Streams' `KStream`, `KGroupedStream`, `TimeWindowedKStream`, `SessionWindowedKStream`,
`KTable`, `KGroupedTable`).

A KStream groups into a KGroupedStream, whose aggregations are KTables, whose `to_stream()` is a KStream again:
the types form one loop, so they are declared together here, each as a thin layer over the module that builds
its part of the graph: `kstream` (a stream's own operations and joins), `kgrouped_stream` (aggregations and
repartitions), `ktable` (a table's own operations), `kgrouped_table`, `joins` and `foreign_key_joins`. Those
modules return plain handles (`StreamHandle`, `KTableBase`), which the types here take on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, overload

from streamlet.errors import TopologyError
from streamlet.serdes import LongSerde, SerdeLike
from streamlet.topology import foreign_key_joins, joins, ktable
from streamlet.topology import nodes as n
from streamlet.topology.dsl_graph import (
    AGGREGATE_NAME,
    KEY_SELECT_NAME,
    REDUCE_NAME,
    TOSTREAM_NAME,
    first_serde,
    or_default,
    processor_node,
    require_callable,
    serde_arg,
    typed_serde,
)
from streamlet.topology.kgrouped_stream import KGroupedStreamBase
from streamlet.topology.kgrouped_table import KGroupedTableBase
from streamlet.topology.kstream import KStreamBase
from streamlet.topology.ktable import KTableBase
from streamlet.topology.nodes import TableOperationSpec, validate_name
from streamlet.topology.pre_aggregation import for_aggregate, for_count, for_reduce
from streamlet.topology.session_windows import SessionWindows
from streamlet.topology.sliding_windows import SlidingWindows
from streamlet.topology.table_joined import TableJoined, resolve_table_joined
from streamlet.topology.windows import TimeWindows
from streamlet.typed_serdes import check_serde_fits, result_type


class KStream(KStreamBase):
    """A record stream. Every operation returns a new KStream (or grouped stream / table)."""

    __slots__ = ()

    def group_by(
        self,
        key_selector: Callable[[Any, Any], Any],
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        *,
        name: str | None = None,
    ) -> KGroupedStream:
        """Group by a new key `key_selector(key, value)`; aggregations then repartition by that key.

        `name` (Kafka's `Grouped.as`) names both the key-selecting processor and the repartition topic
        (`<application_id>-<name>-repartition`); without it the topic is named after the store.
        `key_serde` defaults to the serde of the selector's annotated return type, else this stream's key
        serde (a given one must carry that type); `value_serde` defaults to this stream's value serde.
        """
        require_callable(key_selector, "group_by key_selector")
        ks = serde_arg(key_serde, "key_serde")
        key_type = result_type(key_selector)
        if ks is None:
            ks = typed_serde(key_selector, self._key_serde)
        else:
            check_serde_fits(ks, key_type, "group_by key_serde")
        vs = first_serde(serde_arg(value_serde, "value_serde"), self._value_serde)
        select_name = self._builder.name_or_generate(name, KEY_SELECT_NAME)
        node = processor_node(self._builder, self._node, select_name, n.SELECT_KEY, key_selector)
        return KGroupedStream(self._builder, node, ks, vs, True, name)

    def group_by_key(
        self,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        *,
        name: str | None = None,
    ) -> KGroupedStream:
        """Group by the current key; repartitions only if an upstream operation changed the key.

        `name` (Kafka's `Grouped.as`) names the repartition topic, if one is needed.
        """
        ks = first_serde(serde_arg(key_serde, "key_serde"), self._key_serde)
        vs = first_serde(serde_arg(value_serde, "value_serde"), self._value_serde)
        if name is not None:
            validate_name(name)
        return KGroupedStream(self._builder, self._node, ks, vs, self._repartition_required, name)


class KGroupedStream(KGroupedStreamBase):
    """A stream grouped by key, ready for `count`, `reduce` or `aggregate`, or `windowed_by` windows."""

    __slots__ = ()

    def count(self, store_name: str | None = None, *, name: str | None = None, pre_aggregate: bool = False) -> KTable:
        """Number of records per key, in a store with int64 values (Kafka's `count()`).

        `pre_aggregate=True` counts per key upstream of the repartition topic and sends one partial count per
        key per commit instead of every record (see `streamlet.topology.pre_aggregation`).
        """
        store = self._store_name(store_name, AGGREGATE_NAME)
        processor = self._builder.name_or_generate(name, AGGREGATE_NAME)
        pre = for_count() if pre_aggregate else None
        return KTable.of(self._build(processor, n.COUNT, store, LongSerde(), fn=None, initializer=None, pre=pre))

    def reduce(
        self,
        reducer: Callable[[Any, Any], Any],
        store_name: str | None = None,
        *,
        name: str | None = None,
        pre_aggregate: bool = False,
    ) -> KTable:
        """`reducer(aggregate, value)` per key; the first value of a key is its initial aggregate.

        `pre_aggregate=True` reduces per key upstream of the repartition topic too, so `reducer` must be
        associative (see `streamlet.topology.pre_aggregation`).
        """
        require_callable(reducer, "reducer")
        store = self._store_name(store_name, REDUCE_NAME)
        processor = self._builder.name_or_generate(name, REDUCE_NAME)
        pre = for_reduce(reducer) if pre_aggregate else None
        value_serde = or_default(self._value_serde)
        return KTable.of(self._build(processor, n.REDUCE, store, value_serde, fn=reducer, initializer=None, pre=pre))

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        store_name: str | None = None,
        value_serde: SerdeLike = None,
        *,
        name: str | None = None,
        combiner: Callable[[Any, Any], Any] | None = None,
    ) -> KTable:
        """`aggregator(key, value, aggregate)` per key, starting from `initializer()`.

        `value_serde` stores the aggregate (default: bytes, so give one unless aggregates are bytes).
        A `combiner(aggregate, partial)` turns on pre-aggregation: partial aggregates are built upstream of the
        repartition topic and combined into the stored aggregate, so `initializer()` must be the combiner's
        identity (see `streamlet.topology.pre_aggregation`).
        """
        require_callable(initializer, "initializer")
        require_callable(aggregator, "aggregator")
        agg_serde = serde_arg(value_serde, "value_serde")
        store = self._store_name(store_name, AGGREGATE_NAME)
        processor = self._builder.name_or_generate(name, AGGREGATE_NAME)
        pre = None
        if combiner is not None:
            require_callable(combiner, "combiner")
            pre = for_aggregate(initializer, aggregator, combiner)
        return KTable.of(
            self._build(
                processor, n.AGGREGATE, store, or_default(agg_serde), fn=aggregator, initializer=initializer, pre=pre
            )
        )

    @overload
    def windowed_by(self, windows: TimeWindows | SlidingWindows) -> TimeWindowedKStream: ...

    @overload
    def windowed_by(self, windows: SessionWindows) -> SessionWindowedKStream: ...

    def windowed_by(
        self, windows: TimeWindows | SlidingWindows | SessionWindows
    ) -> TimeWindowedKStream | SessionWindowedKStream:
        """Aggregate per key and window (Kafka's `windowedBy`): fixed time windows (`streamlet.topology.windows`),
        sliding windows (`streamlet.topology.sliding_windows`) or sessions (`streamlet.topology.session_windows`)."""
        if isinstance(windows, SessionWindows):
            return SessionWindowedKStream(self, windows)
        if not isinstance(windows, TimeWindows | SlidingWindows):
            raise TopologyError(f"windowed_by() takes TimeWindows, SlidingWindows or SessionWindows, got {windows!r}")
        return TimeWindowedKStream(self, windows)


class _WindowedKStream:
    """What time-windowed and session-windowed streams share: their grouped stream, their windows, and
    `count`/`reduce`, named exactly as the unwindowed aggregations are (Kafka's shared aggregate builder)."""

    __slots__ = ("_grouped", "_windows")

    def __init__(self, grouped: KGroupedStreamBase, windows: n.Windows) -> None:
        self._grouped = grouped
        self._windows = windows

    def count(self, store_name: str | None = None, *, name: str | None = None) -> KTable:
        """Records per key and window (for sessions, null values count too), in a store with int64 values."""
        grouped = self._grouped
        store = grouped._store_name(store_name, AGGREGATE_NAME)
        processor = grouped._builder.name_or_generate(name, AGGREGATE_NAME)
        return KTable.of(
            grouped._build(processor, n.COUNT, store, LongSerde(), fn=None, initializer=None, windows=self._windows)
        )

    def reduce(
        self, reducer: Callable[[Any, Any], Any], store_name: str | None = None, *, name: str | None = None
    ) -> KTable:
        """`reducer(aggregate, value)` per key and window; a window's first value is its initial aggregate, and
        merging sessions reduces their aggregates too."""
        require_callable(reducer, "reducer")
        grouped = self._grouped
        store = grouped._store_name(store_name, REDUCE_NAME)
        processor = grouped._builder.name_or_generate(name, REDUCE_NAME)
        value_serde = or_default(grouped._value_serde)
        return KTable.of(
            grouped._build(processor, n.REDUCE, store, value_serde, fn=reducer, initializer=None, windows=self._windows)
        )


class TimeWindowedKStream(_WindowedKStream):
    """A grouped stream cut into time windows: `count`, `reduce`, `aggregate` give a KTable keyed by `Windowed`.

    It shares its grouped stream's repartition (as Kafka's shares the aggregate builder), and names nodes and
    stores exactly as the unwindowed aggregations do.
    """

    __slots__ = ()

    def __init__(self, grouped: KGroupedStream, windows: TimeWindows | SlidingWindows) -> None:
        super().__init__(grouped, windows)

    @property
    def windows(self) -> TimeWindows | SlidingWindows:
        assert isinstance(self._windows, TimeWindows | SlidingWindows)
        return self._windows

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        store_name: str | None = None,
        value_serde: SerdeLike = None,
        *,
        name: str | None = None,
    ) -> KTable:
        """`aggregator(key, value, aggregate)` per key and window, each window starting from `initializer()`."""
        require_callable(initializer, "initializer")
        require_callable(aggregator, "aggregator")
        agg_serde = or_default(serde_arg(value_serde, "value_serde"))
        grouped = self._grouped
        store = grouped._store_name(store_name, AGGREGATE_NAME)
        processor = grouped._builder.name_or_generate(name, AGGREGATE_NAME)
        return KTable.of(
            grouped._build(
                processor, n.AGGREGATE, store, agg_serde, fn=aggregator, initializer=initializer, windows=self._windows
            )
        )

    def __repr__(self) -> str:
        return f"TimeWindowedKStream({self._grouped!r}, {self._windows})"


class SessionWindowedKStream(_WindowedKStream):
    """A grouped stream cut into sessions: `count`, `reduce`, `aggregate` give a KTable keyed by `Windowed`
    session keys (Kafka's `SessionWindowedKStream`); names nodes and stores as the other aggregations do."""

    __slots__ = ()

    def __init__(self, grouped: KGroupedStream, windows: SessionWindows) -> None:
        super().__init__(grouped, windows)

    @property
    def windows(self) -> SessionWindows:
        assert isinstance(self._windows, SessionWindows)
        return self._windows

    def aggregate(
        self,
        initializer: Callable[[], Any],
        aggregator: Callable[[Any, Any, Any], Any],
        merger: Callable[[Any, Any, Any], Any],
        store_name: str | None = None,
        value_serde: SerdeLike = None,
        *,
        name: str | None = None,
    ) -> KTable:
        """`aggregator(key, value, aggregate)` per key and session, from `initializer()`; when a record
        bridges sessions, `merger(key, aggregate, other)` folds their aggregates into one (oldest first)."""
        require_callable(initializer, "initializer")
        require_callable(aggregator, "aggregator")
        require_callable(merger, "merger")
        agg_serde = or_default(serde_arg(value_serde, "value_serde"))
        grouped = self._grouped
        store = grouped._store_name(store_name, AGGREGATE_NAME)
        processor = grouped._builder.name_or_generate(name, AGGREGATE_NAME)
        return KTable.of(
            grouped._build(
                processor,
                n.AGGREGATE,
                store,
                agg_serde,
                fn=aggregator,
                initializer=initializer,
                windows=self._windows,
                merger=merger,
            )
        )

    def __repr__(self) -> str:
        return f"SessionWindowedKStream({self._grouped!r}, {self._windows})"


class KTable(KTableBase):
    """A changelog stream: per-key aggregates, or a topic's latest values (`StreamsBuilder.table`).

    Its own operations (`filter`, `map_values`, `suppress`) are `KTableBase`'s; here are those that make a
    stream, a grouped table or a join.
    """

    __slots__ = ()

    def to_stream(self, *, name: str | None = None) -> KStream:
        """The table's updates as a stream (emitted when the store's cache flushes, as in Kafka Streams)."""
        return _to_stream(self, name)

    def group_by(
        self,
        selector: Callable[[Any, Any], tuple[Any, Any]],
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        *,
        name: str | None = None,
    ) -> KGroupedTable:
        """Re-group the table's rows by `selector(key, value) -> (group key, value)` (Kafka's `KTable#groupBy`).

        An update moves its row between groups: the aggregations of the result subtract the old value from
        its old group and add the new one to its new group, through a repartition topic that carries both
        (`<application_id>-<name or store>-repartition`). `name` (Kafka's `Grouped.as`) names the key-selecting
        processor and the topic. `key_serde` / `value_serde` default to the table's.
        """
        return _group_table(self, selector, key_serde, value_serde, name)

    @overload
    def join(
        self,
        other: KTable,
        joiner: Callable[[Any, Any], Any],
        /,
        *,
        name: str | None = None,
        store_name: str | None = None,
        value_serde: SerdeLike = None,
    ) -> KTable: ...

    @overload
    def join(
        self,
        other: KTable,
        foreign_key_extractor: Callable[..., Any],
        joiner: Callable[[Any, Any], Any],
        /,
        *,
        name: str | None = None,
        store_name: str | None = None,
        value_serde: SerdeLike = None,
        table_joined: TableJoined | None = None,
    ) -> KTable: ...

    def join(
        self,
        other: KTable,
        joiner_or_extractor: Callable[..., Any],
        joiner: Callable[[Any, Any], Any] | None = None,
        *,
        name: str | None = None,
        store_name: str | None = None,
        value_serde: SerdeLike = None,
        table_joined: TableJoined | None = None,
    ) -> KTable:
        """`joiner(value, other_value)` for each key both tables hold (Kafka's `KTable#join(KTable)`).

        An update of either table joins with the other's current value; the result's timestamp is the larger
        of the two. A key leaving either table is deleted from the result. Both tables get a store if they
        have none, and their topics must be co-partitioned. `store_name` materializes the result (its values
        written with `value_serde`, default bytes), which joins then read; without it, they read both tables
        and join their values (Kafka's join value getter).

        `join(other, foreign_key_extractor, joiner)` is a foreign-key join (KIP-213): each row joins the row
        of `other` whose key is `foreign_key_extractor(value)` (or `(key, value)`); the tables need not be
        co-partitioned, and a row whose foreign key is None is not in the result (see `streamlet.runtime.
        foreign_key_join`). `table_joined` (Kafka's `TableJoined`) names the join and gives the partitioners
        of tables whose topics are not written with the default partitioner; `name` is short for
        `table_joined=TableJoined.as_(name)`.
        """
        if joiner is not None:
            joined = resolve_table_joined(table_joined, name)
            return KTable.of(
                foreign_key_joins.foreign_key_join(
                    self, other, joiner_or_extractor, joiner, False, joined, store_name, value_serde
                )
            )
        joins.no_table_joined(table_joined)
        return KTable.of(
            joins.table_table_join(self, other, joiner_or_extractor, n.TABLE_JOIN_INNER, name, store_name, value_serde)
        )

    @overload
    def left_join(
        self,
        other: KTable,
        joiner: Callable[[Any, Any], Any],
        /,
        *,
        name: str | None = None,
        store_name: str | None = None,
        value_serde: SerdeLike = None,
    ) -> KTable: ...

    @overload
    def left_join(
        self,
        other: KTable,
        foreign_key_extractor: Callable[..., Any],
        joiner: Callable[[Any, Any], Any],
        /,
        *,
        name: str | None = None,
        store_name: str | None = None,
        value_serde: SerdeLike = None,
        table_joined: TableJoined | None = None,
    ) -> KTable: ...

    def left_join(
        self,
        other: KTable,
        joiner_or_extractor: Callable[..., Any],
        joiner: Callable[[Any, Any], Any] | None = None,
        *,
        name: str | None = None,
        store_name: str | None = None,
        value_serde: SerdeLike = None,
        table_joined: TableJoined | None = None,
    ) -> KTable:
        """`joiner(value, other_value or None)` for each key of this table (Kafka's `KTable#leftJoin`);
        `left_join(other, foreign_key_extractor, joiner)` is the foreign-key left join, which joins a row
        whose foreign key is None, or has no row in `other`, with None (`table_joined` as for `join`)."""
        if joiner is not None:
            joined = resolve_table_joined(table_joined, name)
            return KTable.of(
                foreign_key_joins.foreign_key_join(
                    self, other, joiner_or_extractor, joiner, True, joined, store_name, value_serde
                )
            )
        joins.no_table_joined(table_joined)
        return KTable.of(
            joins.table_table_join(self, other, joiner_or_extractor, n.TABLE_JOIN_LEFT, name, store_name, value_serde)
        )

    def outer_join(
        self,
        other: KTable,
        joiner: Callable[[Any, Any], Any],
        *,
        name: str | None = None,
        store_name: str | None = None,
        value_serde: SerdeLike = None,
    ) -> KTable:
        """`joiner(value or None, other_value or None)` for each key of either table (Kafka's `outerJoin`)."""
        return KTable.of(joins.table_table_join(self, other, joiner, n.TABLE_JOIN_OUTER, name, store_name, value_serde))


class KGroupedTable(KGroupedTableBase):
    """A table re-grouped by `KTable.group_by`: `count`, `reduce`, `aggregate` with adders and subtractors."""

    __slots__ = ()

    def count(self, store_name: str | None = None, *, name: str | None = None) -> KTable:
        """Rows per group, in a store with int64 values; a group whose rows all left keeps its count of 0."""
        return KTable.of(
            self._aggregate(
                ktable.TABLE_AGGREGATE_NAME,
                n.TABLE_AGGREGATE,
                store_name,
                name,
                LongSerde(),
                fn=ktable.count_adder,
                subtractor=ktable.count_subtractor,
                initializer=ktable.count_initializer,
            )
        )

    def reduce(
        self,
        adder: Callable[[Any, Any], Any],
        subtractor: Callable[[Any, Any], Any],
        store_name: str | None = None,
        *,
        name: str | None = None,
    ) -> KTable:
        """`adder(aggregate, value)` for a row joining the group (its first row's value starts it) and
        `subtractor(aggregate, value)` for a row leaving it; values are stored with the grouping's serde."""
        require_callable(adder, "adder")
        require_callable(subtractor, "subtractor")
        value_serde = or_default(self._value_serde)
        return KTable.of(
            self._aggregate(
                ktable.TABLE_REDUCE_NAME, n.TABLE_REDUCE, store_name, name, value_serde, fn=adder, subtractor=subtractor
            )
        )

    def aggregate(
        self,
        initializer: Callable[[], Any],
        adder: Callable[[Any, Any, Any], Any],
        subtractor: Callable[[Any, Any, Any], Any],
        store_name: str | None = None,
        value_serde: SerdeLike = None,
        *,
        name: str | None = None,
    ) -> KTable:
        """`adder(key, value, aggregate)` for a row joining the group (from `initializer()` when the group has
        no aggregate), `subtractor(key, value, aggregate)` for a row leaving it; `value_serde` stores it."""
        require_callable(initializer, "initializer")
        require_callable(adder, "adder")
        require_callable(subtractor, "subtractor")
        agg_serde = or_default(serde_arg(value_serde, "value_serde"))
        return KTable.of(
            self._aggregate(
                ktable.TABLE_AGGREGATE_NAME,
                n.TABLE_AGGREGATE,
                store_name,
                name,
                agg_serde,
                fn=adder,
                subtractor=subtractor,
                initializer=initializer,
            )
        )


def _group_table(
    table: KTable,
    selector: Callable[[Any, Any], tuple[Any, Any]],
    key_serde: SerdeLike,
    value_serde: SerdeLike,
    name: str | None,
) -> KGroupedTable:
    """`KTableImpl#groupBy`: a KTABLE-SELECT node, which needs the table's old values (Kafka's
    `enableSendingOldValues(true)`, materializing a source table if it must)."""
    require_callable(selector, "group_by selector")
    state = table._state
    ks = first_serde(serde_arg(key_serde, "key_serde"), table._key_serde)
    vs = first_serde(serde_arg(value_serde, "value_serde"), table._value_serde)
    internal = table._builder
    select_name = internal.name_or_generate(name, ktable.TABLE_SELECT_NAME)
    node = processor_node(internal, table._node, select_name, n.TABLE_SELECT, selector, TableOperationSpec)
    state.enable_sending_old_values(True)
    return KGroupedTable(internal, node, ks, vs, name)


def _to_stream(table: KTable, name: str | None) -> KStream:
    """`KTable#toStream`: each update's new value (null for a delete), with the update's timestamp."""
    internal = table._builder
    node_name = internal.name_or_generate(name, TOSTREAM_NAME)
    # an aggregation or a suppression forwards plain values (with the replaced one in its record context)
    state = table._state
    if state.aggregation or state.op == n.SUPPRESS:
        node = processor_node(internal, table._node, node_name, n.TO_STREAM)
    else:
        node = processor_node(internal, table._node, node_name, n.TABLE_TO_STREAM, kind=TableOperationSpec)
    return KStream(internal, node, table._key_serde, table._value_serde, repartition_required=False)

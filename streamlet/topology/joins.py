"""Stream-table, stream-global table and table-table joins of the DSL (Kafka Streams' `KStreamImpl#join(KTable)`,
`KTableImpl#doJoin`).

The join processor reads the table through its value getter (its source store, materialized for the join,
then the table's filters and mapValues), so it shares the table's store and lands in the table's
sub-topology. A stream whose key was changed is first written through a repartition topic named after the
join (`<name>-repartition`) or, unnamed, after the stream's node (`KStreamImpl#repartitionForJoin`); the
join's topics must then be co-partitioned, which `Topology` enforces when it is given partition counts.
The DSL methods are `KStream.join` / `left_join` (`streamlet.topology.kstream`) and `KTable.join` / `left_join` /
`outer_join` (`streamlet.topology.dsl`); this module wires stream-table, stream-global table and table-table
joins into the graph (the foreign-key join is in `streamlet.topology.foreign_key_joins`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlet.errors import TopologyError
from streamlet.serdes import SerdeLike
from streamlet.topology import ktable
from streamlet.topology import nodes as n
from streamlet.topology.dsl_graph import (
    GraphNode,
    InternalTopologyBuilder,
    StreamHandle,
    first_serde,
    or_default,
    require_callable,
    serde_arg,
)
from streamlet.topology.global_ktable import GLOBAL_JOIN_NAME, GlobalKTable
from streamlet.topology.kgrouped_stream import repartition_for_join
from streamlet.topology.ktable import KTableBase
from streamlet.topology.nodes import (
    GlobalTableJoinSpec,
    StoreSpec,
    StreamTableJoinSpec,
    TableJoinSpec,
    ValueGetterSpec,
    validate_name,
)
from streamlet.topology.table_joined import TableJoined
from streamlet.topology.windows import TimeWindowedSerde

JOIN_NAME = "KSTREAM-JOIN-"
LEFTJOIN_NAME = "KSTREAM-LEFTJOIN-"


def stream_table_join(
    stream: StreamHandle,
    table: KTableBase,
    joiner: Callable[[Any, Any], Any],
    *,
    left: bool,
    key_serde: SerdeLike,
    value_serde: SerdeLike,
    name: str | None,
) -> StreamHandle:
    """`joiner(stream_value, table_value)` per stream record whose key the table has (or, `left`, always)."""
    if not isinstance(table, KTableBase):
        raise TopologyError(f"join() takes a KTable, got {table!r}")
    if table._builder is not stream._builder:
        raise TopologyError("join(): the stream and the table come from different StreamsBuilders")
    require_callable(joiner, "joiner")
    if isinstance(table._key_serde, TimeWindowedSerde):
        raise TopologyError(f"a windowed table ({table.store_name}) cannot be joined with a stream")
    if name is not None:
        validate_name(name)
    ks = serde_arg(key_serde, "key_serde")
    vs = serde_arg(value_serde, "value_serde")
    internal = stream._builder
    parent = stream._node
    if stream._repartition_required:
        parent = repartition_for_join(stream, name if name is not None else stream.node_name, ks, vs)
    # an aggregation's table is read from its store as it is (Kafka's KStreamAggregate#view)
    getter = table._state.value_getter()
    join_name = internal.name_or_generate(name, LEFTJOIN_NAME if left else JOIN_NAME)
    internal.claim(join_name)
    op = n.STREAM_TABLE_LEFT_JOIN if left else n.STREAM_TABLE_JOIN

    def write(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
        for store in getter.stores:
            if store not in topology.stores:
                raise TopologyError(f"join {join_name}: the table's store {store} is not in the topology")
            if topology.stores[store].windows is not None:
                raise TopologyError(f"join {join_name}: a windowed table ({store}) cannot be joined with a stream")
            topology.store_users[store].append(join_name)
        topology.add(StreamTableJoinSpec(join_name, parents, op, getter.stores, joiner, value_getter=getter))

    node = GraphNode(join_name, write)
    internal.add_graph_node(parent, node)
    if left:
        internal.null_key_relaxed.add(node)  # Kafka's GraphNode.Label.NULL_KEY_RELAXED_JOIN
    # the joined values have no serde (Kafka: "do not have serde for joined result")
    return StreamHandle(internal, node, first_serde(ks, stream._key_serde), None, repartition_required=False)


def stream_global_table_join(
    stream: StreamHandle,
    table: GlobalKTable,
    key_selector: Callable[[Any, Any], Any],
    joiner: Callable[[Any, Any], Any] | None,
    *,
    left: bool,
    name: str | None,
    serdes: tuple[SerdeLike, SerdeLike],
) -> StreamHandle:
    """`KStreamImpl#doGlobalTableJoin`: a KSTREAM-LEFTJOIN node (for joins too) connected to no store (it reads
    the global one), keeping the stream's key serde and whether it must be repartitioned downstream."""
    if table._builder is not stream._builder:
        raise TopologyError("join(): the stream and the global table come from different StreamsBuilders")
    if joiner is None:
        raise TopologyError(
            "join() with a GlobalKTable takes a key selector and a joiner: join(table, key_selector, joiner)"
        )
    if serdes != (None, None):
        raise TopologyError("a join with a GlobalKTable repartitions nothing: it takes no key_serde / value_serde")
    require_callable(key_selector, "key selector")
    require_callable(joiner, "joiner")
    internal = stream._builder
    join_name = internal.name_or_generate(name, GLOBAL_JOIN_NAME)
    internal.claim(join_name)
    op = n.STREAM_GLOBAL_TABLE_LEFT_JOIN if left else n.STREAM_GLOBAL_TABLE_JOIN
    getter = ValueGetterSpec(table.store_name)

    def write(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
        spec = GlobalTableJoinSpec(join_name, parents, op, fn=joiner, value_getter=getter, key_mapper=key_selector)
        topology.add(spec)

    node = GraphNode(join_name, write)
    internal.add_graph_node(stream._node, node)
    if left:
        internal.null_key_relaxed.add(node)  # Kafka labels it NULL_KEY_RELAXED_JOIN too
    return StreamHandle(internal, node, stream._key_serde, None, repartition_required=stream._repartition_required)


def table_table_join(
    table: KTableBase,
    other: KTableBase,
    joiner: Callable[[Any, Any], Any],
    op: str,
    name: str | None,
    store_name: str | None = None,
    value_serde: SerdeLike = None,
) -> KTableBase:
    """`KTableImpl#doJoin` (unmaterialized): KTABLE-JOINTHIS and -JOINOTHER nodes, each reading the other table
    through its value getter, and a KTABLE-MERGE node; names `<name>-join-this` / `-join-other` / `<name>`."""
    this_state, other_state = table_join_sides(table, other, joiner)
    internal = table._builder
    vs = serde_arg(value_serde, "value_serde")
    store = ktable.table_store_name(internal, store_name)
    merge_name = internal.name_or_generate(name, ktable.TABLE_MERGE_NAME)
    if op != n.TABLE_JOIN_INNER:
        this_state.enable_sending_old_values(True)
    if op == n.TABLE_JOIN_OUTER:
        other_state.enable_sending_old_values(True)
    this_getter, other_getter = this_state.value_getter(), other_state.value_getter()  # materializes them
    this_name = internal.new_processor_name(ktable.TABLE_JOINTHIS_NAME)  # suffixWithOrElseGet burns both
    other_name = internal.new_processor_name(ktable.TABLE_JOINOTHER_NAME)
    if name is not None:
        this_name, other_name = validate_name(name + "-join-this"), validate_name(name + "-join-other")
    internal.claim(merge_name, this_name, other_name)
    other_op = n.TABLE_JOIN_RIGHT if op == n.TABLE_JOIN_LEFT else op
    getter = n.TableJoinGetterSpec(op, joiner, this_getter, other_getter)
    state = ktable.join_state(merge_name, this_state, other_state, store, getter)
    store_spec = (
        None if store is None else StoreSpec(store, or_default(table._key_serde), or_default(vs), timestamped=True)
    )

    def reversed_joiner(other_value: Any, value: Any) -> Any:
        return joiner(value, other_value)

    def write(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
        send_old = state.send_old_values
        for side, parent, side_op, fn, getter in (
            (this_name, table.node_name, op, joiner, other_getter),
            (other_name, other.node_name, other_op, reversed_joiner, this_getter),
        ):
            check_joinable(merge_name, getter, topology, side)
            spec = TableJoinSpec(
                side, (parent,), side_op, stores=getter.stores, fn=fn, value_getter=getter, send_old_values=send_old
            )
            topology.add(spec)
        stores = () if store is None else (store,)
        merge = TableJoinSpec(merge_name, (this_name, other_name), n.TABLE_JOIN_MERGE, stores, send_old_values=send_old)
        topology.add(merge)
        if store_spec is not None:
            topology.add_store(store_spec, merge_name)

    node = GraphNode(merge_name, write)
    internal.add_graph_node(table._node, node)
    internal.add_graph_node(other._node, node)
    return KTableBase(internal, node, table._key_serde, vs, store or merge_name, state)


def no_table_joined(table_joined: TableJoined | None) -> None:
    """A primary-key join is named by `name=` (Kafka's `Named`); `TableJoined` is a foreign-key join's."""
    if table_joined is not None:
        raise TopologyError("table_joined= is for foreign-key joins (with a foreign_key_extractor); name= names this")


def table_join_sides(
    table: KTableBase, other: Any, joiner: Callable[[Any, Any], Any]
) -> tuple[ktable.TableState, ktable.TableState]:
    """The states of both tables of a table-table join (primary- or foreign-key), checked."""
    if not isinstance(other, KTableBase) or other._builder is not table._builder:
        raise TopologyError(f"join() takes a KTable of the same StreamsBuilder, got {other!r}")
    require_callable(joiner, "joiner")
    return table._state, other._state


def check_joinable(
    join: str, getter: ValueGetterSpec, topology: InternalTopologyBuilder, reader: str
) -> ValueGetterSpec:
    """A table-table join's `reader` reads key-value stores of the topology through `getter`: connect it to
    every store the getter reads (an unmaterialized join's getter reads both its tables' stores)."""
    for store in getter.stores:
        if store not in topology.stores:
            raise TopologyError(f"join {join}: the table's store {store} is not in the topology")
        if topology.stores[store].windows is not None:
            raise TopologyError(f"join {join}: joining a windowed table ({store}) is not supported")
        topology.store_users[store].append(reader)
    return getter

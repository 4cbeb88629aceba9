"""Names and wiring of a foreign-key KTable-KTable join (Kafka Streams' `KTableImpl#doJoinOnForeignKey`).

Each name takes a counter value in Kafka's order, even when the join is named (`TableJoined.as(name)`,
`NamedInternal#suffixWithOrElseGet`): then names are `<name>-subscription-registration-processor`, ...
The graph wiring is `foreign_key_join` below, the processors are in `streamlet.runtime.foreign_key_join`.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from streamlet.errors import TopologyError
from streamlet.serdes import BytesSerde, SerdeLike
from streamlet.topology import ktable
from streamlet.topology import nodes as n
from streamlet.topology.dsl_graph import GraphNode, InternalTopologyBuilder, or_default, require_callable, serde_arg
from streamlet.topology.joins import check_joinable, table_join_sides
from streamlet.topology.ktable import KTableBase
from streamlet.topology.nodes import (
    ForeignKeyJoinNodeSpec,
    SinkSpec,
    SourceSpec,
    StoreSpec,
    StreamPartitioner,
    TableOperationSpec,
    validate_name,
)
from streamlet.topology.subscription_wrappers import (
    SubscriptionResponseWrapper,
    SubscriptionResponseWrapperSerde,
    SubscriptionWrapperSerde,
)
from streamlet.topology.table_joined import TableJoined

FK_JOIN = "KTABLE-FK-JOIN-"
SUBSCRIPTION_REGISTRATION = FK_JOIN + "SUBSCRIPTION-REGISTRATION-"
SUBSCRIPTION_RESPONSE = FK_JOIN + "SUBSCRIPTION-RESPONSE-"
SUBSCRIPTION_PROCESSOR = FK_JOIN + "SUBSCRIPTION-PROCESSOR-"
SUBSCRIPTION_STATE_STORE = FK_JOIN + "SUBSCRIPTION-STATE-STORE-"
RESPONSE_RESOLVER = FK_JOIN + "SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-"
OUTPUT = FK_JOIN + "OUTPUT-"
SINK = "KTABLE-SINK-"
SOURCE = "KTABLE-SOURCE-"
TOPIC_SUFFIX = "-topic"


@dataclass(frozen=True)
class ForeignKeyJoinNames:
    subscription_topic: str
    subscription_send: str
    subscription_sink: str
    subscription_source: str
    subscription_store: str
    subscription_receive: str
    subscription_join: str
    foreign_table_join: str
    response_topic: str
    response_sink: str
    response_source: str
    response_join: str
    result: str


def foreign_key_join_names(name: str | None, new_name: Callable[[str], str]) -> ForeignKeyJoinNames:
    """The names, in Kafka's order; `new_name(prefix)` takes the next counter value."""
    if name is not None:
        validate_name(name)

    def named(suffix: str, prefix: str) -> str:
        generated = new_name(prefix)
        return generated if name is None else validate_name(name + suffix)

    return ForeignKeyJoinNames(
        subscription_topic=named("-subscription-registration", SUBSCRIPTION_REGISTRATION) + TOPIC_SUFFIX,
        subscription_send=named("-subscription-registration-processor", SUBSCRIPTION_REGISTRATION),
        subscription_sink=named("-subscription-registration-sink", SINK),
        subscription_source=named("-subscription-registration-source", SOURCE),
        subscription_store=named("-subscription-store", SUBSCRIPTION_STATE_STORE),
        subscription_receive=named("-subscription-receive", SUBSCRIPTION_PROCESSOR),
        subscription_join=named("-subscription-join-foreign", SUBSCRIPTION_PROCESSOR),
        foreign_table_join=named("-foreign-join-subscription", SUBSCRIPTION_PROCESSOR),
        response_topic=named("-subscription-response", SUBSCRIPTION_RESPONSE) + TOPIC_SUFFIX,
        response_sink=named("-subscription-response-sink", SINK),
        response_source=named("-subscription-response-source", SOURCE),
        response_join=named("-subscription-response-resolver", RESPONSE_RESOLVER),
        result=named("-result", OUTPUT),
    )


def key_value_extractor(extractor: Callable[..., Any]) -> Callable[[Any, Any], Any]:
    """`extractor(value)` (Kafka's `Function<V, KO>`) or `extractor(key, value)` (KIP-1104's
    `BiFunction<K, V, KO>`), told apart by how many positional arguments it takes, as `(key, value) -> fk`."""
    try:
        parameters = inspect.signature(extractor).parameters.values()
    except (TypeError, ValueError):  # a builtin without a signature: a function of the value
        parameters = None
    if parameters is not None:
        positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        required = [p for p in positional if p.default is p.empty]
        if any(p.kind == p.VAR_POSITIONAL for p in parameters) or len(required) == 2:
            return extractor
        if len(required) > 2 or (not required and not positional):
            raise TopologyError(
                f"foreign_key_extractor must take (value) or (key, value), got {extractor!r} with "
                f"{len(required)} required arguments"
            )

    def of_value(key: Any, value: Any) -> Any:
        return extractor(value)

    return of_value


def key_partitioner(partitioner: StreamPartitioner | None) -> StreamPartitioner | None:
    """A `TableJoined` partitioner as a subscription / response sink calls it: with no value, as Kafka's
    `doJoinOnForeignKey` calls `partitioner.partitions(topic, key, null, numPartitions)` (a placement that
    depends on the value could not be co-partitioned with the table)."""
    if partitioner is None:
        return None

    def by_key(topic: str, key: Any, value: Any, num_partitions: int) -> int | None:
        return partitioner(topic, key, None, num_partitions)

    return by_key


def foreign_key_join(
    table: KTableBase,
    other: KTableBase,
    extractor: Callable[..., Any],
    joiner: Callable[[Any, Any], Any],
    left_join: bool,
    table_joined: TableJoined,
    store_name: str | None,
    value_serde: SerdeLike,
) -> KTableBase:
    """`KTableImpl#doJoinOnForeignKey`: subscriptions go from this table to `other` through the subscription
    topic (a subscription store on the foreign side), responses come back through the response topic to a
    resolver reading this table, which feeds a KTABLE-FK-JOIN-OUTPUT table source (see
    `streamlet.topology.foreign_key_joins` for the names)."""
    require_callable(extractor, "foreign_key_extractor")
    extract = key_value_extractor(extractor)
    this_state, other_state = table_join_sides(table, other, joiner)
    internal = table._builder
    vs = serde_arg(value_serde, "value_serde")
    other_state.enable_sending_old_values(True)
    this_state.enable_sending_old_values(True)
    names = foreign_key_join_names(table_joined.name, internal.new_processor_name)
    if store_name is not None:
        result_store = validate_name(store_name, "Store name")
    else:  # MaterializedInternal names it even when not materialized
        result_store = internal.new_store_name(OUTPUT)
    internal.claim(
        names.subscription_send,
        names.subscription_sink,
        names.subscription_source,
        names.subscription_receive,
        names.subscription_join,
        names.foreign_table_join,
        names.response_sink,
        names.response_source,
        names.response_join,
        names.result,
    )
    internal.claim_store(names.subscription_store)
    if store_name is not None:
        internal.claim_store(result_store)
    key_serde, fk_serde = or_default(table._key_serde), or_default(other._key_serde)
    spec = n.ForeignKeyJoinSpec(
        names.subscription_topic,
        left_join,
        fk_serde,
        key_serde,
        or_default(table._value_serde),
        names.subscription_store,
    )
    subscription_serde = SubscriptionWrapperSerde(key_serde)
    response_serde = SubscriptionResponseWrapperSerde(or_default(other._value_serde))
    this_getter, other_getter = this_state.value_getter(), other_state.value_getter()  # materializes them
    source = ktable.TableSource(result_store, materialized=store_name is not None)
    state = ktable.TableState(source, None, n.TABLE_SOURCE, None)
    subscription_partitioner = key_partitioner(table_joined.other_partitioner)
    response_partitioner = key_partitioner(table_joined.partitioner) or primary_partition

    def node(
        parents: tuple[GraphNode, ...],
        node_name: str,
        write: Callable[[tuple[str, ...], InternalTopologyBuilder], None],
    ) -> GraphNode:
        graph_node = GraphNode(node_name, write)
        for parent in parents:
            internal.add_graph_node(parent, graph_node)
        return graph_node

    def write_send(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
        topology.add(
            ForeignKeyJoinNodeSpec(
                names.subscription_send, parents, n.FK_SUBSCRIPTION_SEND, fn=extract, foreign_key_join=spec
            )
        )

    def write_subscription_sink(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
        topology.internal_topics[names.subscription_topic] = None
        topic, partitioner = names.subscription_topic, subscription_partitioner
        topology.add(SinkSpec(names.subscription_sink, parents, topic, fk_serde, subscription_serde, partitioner))

    def write_subscription_source(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
        topics = (names.subscription_topic,)
        topology.add(SourceSpec(names.subscription_source, (), topics, fk_serde, subscription_serde))

    def write_receive(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
        stores = (names.subscription_store,)
        topology.add(
            ForeignKeyJoinNodeSpec(
                names.subscription_receive, parents, n.FK_SUBSCRIPTION_RECEIVE, stores, foreign_key_join=spec
            )
        )
        store = StoreSpec(names.subscription_store, BytesSerde(), subscription_serde, timestamped=True, cached=False)
        topology.add_store(store, names.subscription_receive)

    def write_subscription_join(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
        getter = check_joinable(names.result, other_getter, topology, names.subscription_join)
        topology.add(
            ForeignKeyJoinNodeSpec(
                names.subscription_join,
                parents,
                n.FK_SUBSCRIPTION_JOIN,
                getter.stores,
                value_getter=getter,
                foreign_key_join=spec,
            )
        )

    def write_foreign_table_join(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
        stores = (names.subscription_store,)
        topology.add(
            ForeignKeyJoinNodeSpec(
                names.foreign_table_join, parents, n.FK_FOREIGN_TABLE_JOIN, stores, foreign_key_join=spec
            )
        )
        topology.store_users[names.subscription_store].append(names.foreign_table_join)

    def write_response_sink(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
        topology.internal_topics[names.response_topic] = None
        topic, partitioner = names.response_topic, response_partitioner
        topology.add(SinkSpec(names.response_sink, parents, topic, key_serde, response_serde, partitioner))

    def write_response_source(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
        topology.add(SourceSpec(names.response_source, (), (names.response_topic,), key_serde, response_serde))

    def write_response_join(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
        getter = check_joinable(names.result, this_getter, topology, names.response_join)
        topology.add(
            ForeignKeyJoinNodeSpec(
                names.response_join,
                parents,
                n.FK_RESPONSE_JOIN,
                getter.stores,
                fn=joiner,
                value_getter=getter,
                foreign_key_join=spec,
            )
        )

    value_serde_ = or_default(vs)

    def write_result(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
        stores = (result_store,) if source.materialized else ()
        send_old = source.send_old_values
        topology.add(TableOperationSpec(names.result, parents, n.TABLE_SOURCE, stores=stores, send_old_values=send_old))
        if source.materialized:
            topology.add_store(StoreSpec(result_store, key_serde, value_serde_, timestamped=True), names.result)

    send = node((table._node,), names.subscription_send, write_send)
    sink = node((send,), names.subscription_sink, write_subscription_sink)
    subscriptions = node((sink,), names.subscription_source, write_subscription_source)
    receive = node((subscriptions,), names.subscription_receive, write_receive)
    subscription_join = node((receive,), names.subscription_join, write_subscription_join)
    foreign_join = node((other._node,), names.foreign_table_join, write_foreign_table_join)
    response_sink = node((subscription_join, foreign_join), names.response_sink, write_response_sink)
    responses = node((response_sink,), names.response_source, write_response_source)
    resolver = node((responses,), names.response_join, write_response_join)
    result = node((resolver,), names.result, write_result)
    return KTableBase(internal, result, table._key_serde, vs, result_store, state)


def primary_partition(topic: str, key: Any, response: SubscriptionResponseWrapper, num_partitions: int) -> int | None:
    """The response sink's partitioner: back to the partition the subscription came from."""
    return response.primary_partition

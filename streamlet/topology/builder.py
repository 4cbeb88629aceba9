"""The DSL's entry point, `StreamsBuilder` (Kafka Streams' `StreamsBuilder`): sources (`stream`, `table`,
`global_table`), declared stores, and `build()`, which optimizes the logical graph and writes the `Topology`.

The types it returns are in `streamlet.topology.dsl`; how names are generated, in `streamlet.topology.dsl_graph`.
"""

from __future__ import annotations

from collections.abc import Iterable

from streamlet.errors import TopologyError
from streamlet.serdes import SerdeLike
from streamlet.topology import ktable, optimizer
from streamlet.topology import nodes as n
from streamlet.topology.dsl import KStream, KTable
from streamlet.topology.dsl_graph import (
    SOURCE_NAME,
    GraphNode,
    InternalStreamsBuilder,
    InternalTopologyBuilder,
    or_default,
    serde_arg,
)
from streamlet.topology.global_ktable import GlobalKTable
from streamlet.topology.nodes import SourceSpec, StoreSpec, TableOperationSpec, validate_name
from streamlet.topology.topology import Topology
from streamlet.topology.windows import TimeWindows


class StreamsBuilder:
    """Entry point of the DSL: `stream()` the input topics, chain operations, then `build()`."""

    def __init__(self) -> None:
        self._internal = InternalStreamsBuilder()

    def add_store(
        self,
        name: str,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        *,
        windows: TimeWindows | None = None,
        queryable: bool = True,
    ) -> None:
        """Declare a store for `KStream.process(..., stores=[name])` (Kafka's `addStateStore`); with `windows`, a
        window store (WindowKeySchema keys, segmented, keeping windows `windows.retention_ms` long).
        `queryable=False` hides it from interactive queries (a store of the library's own bookkeeping)."""
        validate_name(name, "Store name")
        self._internal.claim_store(name)
        self._internal.state_stores[name] = StoreSpec(
            name,
            or_default(serde_arg(key_serde, "key_serde")),
            or_default(serde_arg(value_serde, "value_serde")),
            windows=windows,
            queryable=queryable,
        )

    def stream(
        self,
        topics: str | Iterable[str],
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        *,
        name: str | None = None,
    ) -> KStream:
        """A KStream of one topic or a list of topics (Kafka's `builder.stream(topics, Consumed)`)."""
        topic_list = [topics] if isinstance(topics, str) else list(topics)
        if not topic_list:
            raise TopologyError("stream() needs at least one topic")
        for topic in topic_list:
            if not isinstance(topic, str) or not topic:
                raise TopologyError(f"topic names must be non-empty strings, got {topic!r}")
        if len(set(topic_list)) != len(topic_list):
            raise TopologyError(f"stream() got a topic twice: {topic_list}")
        ks = serde_arg(key_serde, "key_serde")
        vs = serde_arg(value_serde, "value_serde")
        internal = self._internal
        source_name = internal.name_or_generate(name, SOURCE_NAME)
        internal.claim(source_name)
        internal.claim_topics(source_name, topic_list)
        spec = SourceSpec(source_name, (), tuple(topic_list), or_default(ks), or_default(vs))
        node = GraphNode(source_name, lambda parents, topology: topology.add(spec))
        internal.add_graph_node(internal.root, node)
        return KStream(internal, node, ks, vs, repartition_required=False)

    def table(
        self,
        topic: str,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        store_name: str | None = None,
        *,
        name: str | None = None,
    ) -> KTable:
        """A KTable of `topic`'s latest value per key (Kafka's `builder.table(topic, Consumed, Materialized)`).

        With `store_name` the table is materialized in a timestamped key-value store with a changelog
        (`<application_id>-<store_name>-changelog`) behind the record cache; without one it is materialized
        only if a join needs to read it. A null key is dropped, a null value deletes the key.
        """
        return _table(self._internal, topic, key_serde, value_serde, store_name, name)

    def global_table(
        self,
        topic: str,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        store_name: str | None = None,
        *,
        name: str | None = None,
    ) -> GlobalKTable:
        """A GlobalKTable of `topic` (Kafka's `builder.globalTable(topic, Consumed, Materialized)`): every client
        holds all of its partitions in the store `store_name` (default `<topic>-STATE-STORE-<n>`), restored
        from the topic (no changelog) before processing starts and kept up to date while it runs.
        """
        return _global_table(self._internal, topic, key_serde, value_serde, store_name, name)

    def build(self, topology_optimization: str = optimizer.NO_OPTIMIZATION) -> Topology:
        """The Topology built so far (later DSL calls on this builder do not change it), optimized as
        Kafka's `build(props)` with `topology.optimization` set to `topology_optimization` (see
        `streamlet.topology.optimizer`). As in Kafka, the optimizations rewrite this builder's graph: build once."""
        optimizer.optimize(self._internal, optimizer.verify_topology_optimization(topology_optimization))
        written = self._internal.build()
        return Topology(
            nodes=tuple(written.nodes.values()),
            stores=tuple(written.stores.values()),
            store_users={k: tuple(v) for k, v in written.store_users.items()},
            internal_topics=tuple(written.internal_topics),
            source_changelogs=written.source_changelogs,
        )


def _table(
    internal: InternalStreamsBuilder,
    topic: str,
    key_serde: SerdeLike,
    value_serde: SerdeLike,
    store_name: str | None,
    name: str | None,
) -> KTable:
    """`StreamsBuilder#table(topic, Consumed, Materialized)`: a KSTREAM-SOURCE feeding a KTABLE-SOURCE
    (see `streamlet.topology.ktable` for what is decided when)."""
    if not isinstance(topic, str) or not topic:
        raise TopologyError(f"table() needs a non-empty topic name, got {topic!r}")
    ks = serde_arg(key_serde, "key_serde")
    vs = serde_arg(value_serde, "value_serde")
    if store_name is not None:
        store = validate_name(store_name, "Store name")
    else:
        store = internal.new_store_name(topic + "-")  # MaterializedInternal names it even when not materialized
    generated = internal.new_processor_name(SOURCE_NAME)  # NamedInternal#suffixWithOrElseGet burns it
    source_name = generated if name is None else validate_name(validate_name(name) + ktable.TABLE_SOURCE_SUFFIX)
    table_source_name = internal.name_or_generate(name, ktable.TABLE_SOURCE_NAME)
    internal.claim(source_name, table_source_name)
    internal.claim_topics(source_name, [topic])
    if store_name is not None:
        internal.claim_store(store)
    source = ktable.TableSource(store, materialized=store_name is not None)
    state = ktable.TableState(source, None, n.TABLE_SOURCE, None)
    key_serde_, value_serde_ = or_default(ks), or_default(vs)

    def write(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
        topology.add(SourceSpec(source_name, (), (topic,), key_serde_, value_serde_))
        stores = (store,) if source.materialized else ()
        topology.add(
            TableOperationSpec(
                table_source_name, (source_name,), n.TABLE_SOURCE, stores=stores, send_old_values=source.send_old_values
            )
        )
        if source.materialized:
            topology.add_store(StoreSpec(store, key_serde_, value_serde_, timestamped=True), table_source_name)
            if internal.reuse_ktable_source_topics:  # Kafka's connectSourceStoreAndTopic
                topology.source_changelogs[store] = topic

    node = GraphNode(table_source_name, write)
    internal.add_graph_node(internal.root, node)
    return KTable(internal, node, ks, vs, store, state)


def _global_table(
    internal: InternalStreamsBuilder,
    topic: str,
    key_serde: SerdeLike,
    value_serde: SerdeLike,
    store_name: str | None,
    name: str | None,
) -> GlobalKTable:
    """`InternalStreamsBuilder#globalTable`: names as `table()`'s (store, then source, then KTABLE-SOURCE), the
    store always materialized, timestamped and not logged; the source is global (its group has no tasks)."""
    if not isinstance(topic, str) or not topic:
        raise TopologyError(f"global_table() needs a non-empty topic name, got {topic!r}")
    ks = or_default(serde_arg(key_serde, "key_serde"))
    vs = or_default(serde_arg(value_serde, "value_serde"))
    store = validate_name(store_name, "Store name") if store_name is not None else internal.new_store_name(topic + "-")
    generated = internal.new_processor_name(SOURCE_NAME)
    source_name = generated if name is None else validate_name(validate_name(name) + ktable.TABLE_SOURCE_SUFFIX)
    processor_name = internal.name_or_generate(name, ktable.TABLE_SOURCE_NAME)
    internal.claim(source_name, processor_name)
    internal.claim_topics(source_name, [topic])
    internal.claim_store(store)

    def write(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
        topology.add(SourceSpec(source_name, (), (topic,), ks, vs, is_global=True))
        topology.add(TableOperationSpec(processor_name, (source_name,), n.TABLE_SOURCE, stores=(store,)))
        topology.add_store(StoreSpec(store, ks, vs, logged=False, timestamped=True), processor_name)

    internal.add_graph_node(internal.root, GraphNode(processor_name, write))
    return GlobalKTable(internal, store, topic, ks, vs)

"""Re-grouped tables (Kafka Streams' `KGroupedTableImpl`): the repartition topic of Change values and the
aggregation node with its store. The DSL's `KGroupedTable` (`streamlet.topology.dsl`) names each aggregation."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlet.serdes import Serde
from streamlet.topology import ktable
from streamlet.topology.change import ChangeSerde
from streamlet.topology.dsl_graph import (
    REPARTITION_TOPIC_SUFFIX,
    SINK_NAME,
    SOURCE_NAME,
    GraphNode,
    InternalStreamsBuilder,
    InternalTopologyBuilder,
    or_default,
)
from streamlet.topology.ktable import KTableBase
from streamlet.topology.nodes import SinkSpec, SourceSpec, StoreSpec, TableAggregateSpec, validate_name


class KGroupedTableBase:
    """A table re-grouped by `KTable.group_by`, and how its aggregations (with adders and subtractors) are built.

    Each aggregation reads the grouped updates from a repartition topic of its own, named after its store,
    unless the grouping was named, when they share `<name>-repartition` (Kafka's `KGroupedTableImpl`). Node
    and store names are Kafka's: `KTABLE-AGGREGATE-<n>` (`KTABLE-REDUCE-<n>`) in a store
    `KTABLE-AGGREGATE-STATE-STORE-<n>`, the topic's sink and source `KSTREAM-SINK-`/`KSTREAM-SOURCE-<n>`, or
    `<name>-sink` / `<name>-source` after a named aggregation.
    """

    __slots__ = ("_builder", "_node", "_key_serde", "_value_serde", "_repartition_name", "_repartition_node")

    def __init__(
        self,
        builder: InternalStreamsBuilder,
        node: GraphNode,
        key_serde: Serde | None,
        value_serde: Serde | None,
        repartition_name: str | None,
    ) -> None:
        self._builder = builder
        self._node = node
        self._key_serde = key_serde
        self._value_serde = value_serde
        self._repartition_name = repartition_name
        self._repartition_node: GraphNode | None = None

    def _aggregate(
        self,
        prefix: str,
        op: str,
        store_name: str | None,
        name: str | None,
        store_value_serde: Serde,
        *,
        fn: Callable[..., Any],
        subtractor: Callable[..., Any],
        initializer: Callable[[], Any] | None = None,
    ) -> KTableBase:
        """`KGroupedTableImpl#doAggregate`: store name, then sink, source and processor names."""
        builder = self._builder
        if store_name is not None:
            store = validate_name(store_name, "Store name")
        else:
            store = builder.new_store_name(ktable.TABLE_AGGREGATE_NAME)  # reduce's store too (MaterializedInternal)
        if name is not None:
            validate_name(name)
        gen_sink = builder.new_processor_name(SINK_NAME)  # NamedInternal#suffixWithOrElseGet burns them
        gen_source = builder.new_processor_name(SOURCE_NAME)
        sink, source = (gen_sink, gen_source) if name is None else (name + "-sink", name + "-source")
        processor = builder.name_or_generate(name, prefix)
        topic = (self._repartition_name or store) + REPARTITION_TOPIC_SUFFIX
        if self._repartition_node is None or self._repartition_name is None:
            self._repartition_node = self._repartition(sink, source, topic)
        repartition = self._repartition_node
        builder.add_graph_node(self._node, repartition)
        builder.claim(processor)
        builder.claim_store(store)
        key_serde = or_default(self._key_serde)
        store_spec = StoreSpec(store, key_serde, store_value_serde, timestamped=True)
        state = ktable.aggregation_state(store)

        def write(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
            spec = TableAggregateSpec(
                processor,
                parents,
                op,
                stores=(store,),
                fn=fn,
                initializer=initializer,
                subtractor=subtractor,
                send_old_values=state.send_old_values,
            )
            topology.add(spec)
            topology.add_store(store_spec, processor)

        node = GraphNode(processor, write)
        builder.add_graph_node(repartition, node)
        return KTableBase(builder, node, self._key_serde, store_value_serde, store, state)

    def _repartition(self, sink: str, source: str, topic: str) -> GraphNode:
        """Kafka's `GroupedTableOperationRepartitionNode`: a sink and a source of Change values, no filter."""
        builder = self._builder
        validate_name(sink)
        validate_name(source)
        builder.claim(sink, source)
        builder.claim_topics(source, [topic])
        key_serde = or_default(self._key_serde)
        value_serde = ChangeSerde(or_default(self._value_serde))

        def write(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
            topology.internal_topics[topic] = None
            topology.add(SinkSpec(sink, parents, topic, key_serde, value_serde))
            topology.add(SourceSpec(source, (), (topic,), key_serde, value_serde))

        return GraphNode(source, write)

    def __repr__(self) -> str:
        return f"KGroupedTable({self._node.name})"

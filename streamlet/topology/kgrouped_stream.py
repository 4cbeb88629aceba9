"""Grouped streams (Kafka Streams' `KGroupedStreamImpl` and `GroupedStreamAggregateBuilder`).

`KGroupedStreamBase` holds a grouped stream and builds its aggregations: the repartition topic (reused when the
grouping is named), the optional pre-aggregation before it, and the aggregation node with its store. The DSL's
`KGroupedStream` and the windowed streams (`streamlet.topology.dsl`) name the operation and call `_build`, as
Kafka's grouped, windowed and session-windowed streams share one aggregate builder; a repartitioned stream
(`KStream.repartition`) and a join's repartition use `_repartition` too.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from streamlet.errors import TopologyError
from streamlet.serdes import Serde
from streamlet.topology import ktable, optimizer
from streamlet.topology import nodes as n
from streamlet.topology.dsl_graph import (
    FILTER_NAME,
    GENERATED_NAME,
    REPARTITION_TOPIC_SUFFIX,
    SINK_NAME,
    SOURCE_NAME,
    GraphNode,
    InternalStreamsBuilder,
    InternalTopologyBuilder,
    StreamHandle,
    first_serde,
    or_default,
    processor_node,
    repartition_node,
)
from streamlet.topology.ktable import KTableBase
from streamlet.topology.nodes import AggregateSpec, PreAggregateSpec, StoreSpec, validate_name
from streamlet.topology.pre_aggregation import PreAggregation, preaggregate_name
from streamlet.topology.session_windows import SessionWindowedSerde, SessionWindows
from streamlet.topology.windows import TimeWindowedSerde


class KGroupedStreamBase:
    """A stream grouped by key: its repartition and how its aggregations are built."""

    __slots__ = (
        "_builder",
        "_node",
        "_key_serde",
        "_value_serde",
        "_repartition_required",
        "_repartition_name",
        "_repartition_node",
        "_repartition_pre_aggregated",
    )

    def __init__(
        self,
        builder: InternalStreamsBuilder,
        node: GraphNode,
        key_serde: Serde | None,
        value_serde: Serde | None,
        repartition_required: bool,
        repartition_name: str | None,
    ) -> None:
        self._builder = builder
        self._node = node
        self._key_serde = key_serde
        self._value_serde = value_serde
        self._repartition_required = repartition_required
        self._repartition_name = repartition_name
        self._repartition_node: GraphNode | None = None  # reused when the repartition topic is user-named
        self._repartition_pre_aggregated = False

    def _store_name(self, store_name: str | None, prefix: str) -> str:
        if store_name is not None:
            return validate_name(store_name, "Store name")
        return self._builder.new_store_name(prefix)

    def _build(
        self,
        processor: str,
        op: str,
        store: str,
        store_value_serde: Serde,
        *,
        fn: Callable[..., Any] | None,
        initializer: Callable[[], Any] | None,
        windows: n.Windows | None = None,
        pre: PreAggregation | None = None,
        merger: Callable[[Any, Any, Any], Any] | None = None,
    ) -> KTableBase:
        """`GroupedStreamAggregateBuilder#build` (and `#buildWindowed`, with `windows`); with `pre`, a
        pre-aggregation node before the repartition topic, which then carries partials."""
        builder = self._builder
        parent = self._node
        if pre is not None:
            self._check_pre_aggregation(processor)
            op, fn, initializer = pre.merge_op, pre.merge_fn, pre.initializer
            upstream = processor_node(
                builder, self._node, preaggregate_name(processor), n.PREAGGREGATE, pre.fold, PreAggregateSpec
            )
            parent = self._repartition(self._repartition_name or store, upstream, store_value_serde)
            self._repartition_pre_aggregated = True
        elif self._repartition_required:
            if self._repartition_pre_aggregated:
                raise TopologyError(
                    f"aggregation {processor} would share repartition topic {self._repartition_name} with a "
                    "pre-aggregated one, whose records are partial aggregates: name the repartitions apart"
                )
            parent = self._repartition(self._repartition_name or store)
        builder.claim(processor)
        builder.claim_store(store)
        key_serde = or_default(self._key_serde)
        sessions = isinstance(windows, SessionWindows)  # a session store's values carry no timestamp, as Kafka's
        store_spec = StoreSpec(store, key_serde, store_value_serde, timestamped=not sessions, windows=windows)
        state = ktable.aggregation_state(store)

        def write(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
            topology.add(
                AggregateSpec(
                    processor,
                    parents,
                    op,
                    stores=(store,),
                    fn=fn,
                    initializer=initializer,
                    windows=windows,
                    merger=merger,
                    send_old_values=state.send_old_values,
                )
            )
            topology.add_store(store_spec, processor)

        node = GraphNode(processor, write)
        builder.add_graph_node(parent, node)
        # a windowed table's keys are Windowed (Kafka's FullTimeWindowedSerde or SessionWindowedSerde over the
        # grouping key serde)
        table_key_serde: Serde | None = self._key_serde
        if isinstance(windows, SessionWindows):
            table_key_serde = SessionWindowedSerde(key_serde)
        elif windows is not None:
            table_key_serde = TimeWindowedSerde(key_serde, windows.size_ms)
        # how long after its end a window still changes, for suppress(until_window_closes): Kafka's
        # GraphGraceSearchUtil (a session can still grow by its inactivity gap)
        grace = None if windows is None else windows.grace_ms
        if isinstance(windows, SessionWindows):
            grace = windows.grace_ms + windows.inactivity_gap_ms
        return KTableBase(builder, node, table_key_serde, store_value_serde, store, state, grace_ms=grace)

    def _check_pre_aggregation(self, processor: str) -> None:
        if not self._repartition_required:
            raise TopologyError(
                f"aggregation {processor}: pre-aggregation folds records before a repartition topic, and this "
                "grouped stream has none (it was not re-keyed); drop pre_aggregate/combiner"
            )
        if self._repartition_node is not None:
            raise TopologyError(
                f"aggregation {processor} would pre-aggregate into repartition topic {self._repartition_name}, "
                "which another aggregation already reads record by record: name the repartitions apart"
            )

    def _repartition(
        self,
        prefix: str,
        upstream: GraphNode | None = None,
        value_serde: Serde | None = None,
        *,
        optimizable: bool = True,
    ) -> GraphNode:
        """Kafka's `createRepartitionedSource`, plus the node reuse of GroupedStreamAggregateBuilder.

        `upstream` (default: the grouped stream's node) feeds the topic; `value_serde` replaces the stream's
        value serde for it (a pre-aggregation writes partials, so its topic is never merged with another).
        """
        builder = self._builder
        topic = prefix if prefix.endswith(REPARTITION_TOPIC_SUFFIX) else prefix + REPARTITION_TOPIC_SUFFIX
        # Always generate the names, to burn the counter values for compatibility.
        gen_sink = builder.new_processor_name(SINK_NAME)
        gen_filter = builder.new_processor_name(FILTER_NAME)
        gen_source = builder.new_processor_name(SOURCE_NAME)
        reuse = self._repartition_node is not None and self._repartition_name is not None
        if not reuse:
            if GENERATED_NAME.fullmatch(prefix):
                sink, filter_, source = gen_sink, gen_filter, gen_source
            else:
                sink, filter_, source = topic + "-sink", topic + "-filter", topic + "-source"
            builder.claim(filter_, sink, source)
            builder.claim_topics(source, [topic])
            key_serde = or_default(self._key_serde)
            topic_value_serde = or_default(self._value_serde if value_serde is None else value_serde)
            self._repartition_node = repartition_node(
                builder, topic, sink, filter_, source, key_serde, topic_value_serde
            )
            if optimizable and value_serde is None:
                self._repartition_node.repartition = optimizer.Repartition(topic, self._key_serde, self._value_serde)
        node = self._repartition_node
        assert node is not None
        # Re-adding a reused node moves its build priority, exactly as in Kafka Streams.
        builder.add_graph_node(self._node if upstream is None else upstream, node)
        return node

    def __repr__(self) -> str:
        return f"KGroupedStream({self._node.name})"


def repartition_for_join(stream: StreamHandle, prefix: str, key_serde: Any, value_serde: Any) -> GraphNode:
    """`repartitionForJoin`: the names are always generated (three counter values). Like Kafka's KStreamImpl,
    a stream keeps the repartition of its last join and reuses it for an unnamed join (whose prefix is the
    stream's own name)."""
    internal = stream._builder
    cached = internal.join_repartitions.get(stream._node)
    if cached is not None and prefix == stream.node_name:
        for generated in (SINK_NAME, FILTER_NAME, SOURCE_NAME):
            internal.new_processor_name(generated)
        return cached
    ks = first_serde(key_serde, stream._key_serde)
    vs = first_serde(value_serde, stream._value_serde)
    node = KGroupedStreamBase(internal, stream._node, ks, vs, True, None)._repartition(prefix)
    internal.join_repartitions[stream._node] = node
    return node

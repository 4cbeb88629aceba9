"""The DSL: `StreamsBuilder`, `KStream`, `KGroupedStream`, `KTable`, mirroring Kafka Streams.

Node and store names follow Kafka Streams exactly, so `describe()` output and internal topic names match
what a Java application with the same DSL calls would get:

* one counter per builder; every generated name takes the next value, formatted `%010d`
  (`InternalStreamsBuilder#newProcessorName` / `#newStoreName`: `<PREFIX><n>` and
  `<PREFIX>STATE-STORE-<n>`); a user-supplied processor `name=` (Kafka's `Named`) still takes one
  (`NamedInternal#orElseGenerateWithPrefix` burns it), a user-supplied store name does not;
* an unnamed aggregation store takes its value *before* the aggregation processor does;
* a repartition (`KStreamImpl#createRepartitionedSource`) always takes three values (sink, filter,
  source, in that order) for compatibility, but uses them as node names only when the topic prefix is
  itself generated (matches `KSTREAM.*-\\d{10}`); otherwise the nodes are `<prefix>-repartition-sink`,
  `-filter` and `-source`.
* nodes reach the topology in the order of Kafka's build priority queue (the order operations were
  added; re-using a named repartition moves it to the end, as `addGraphNode` does), which fixes
  sub-topology ids.

Serdes left as None mean "the default serde" (bytes), like Kafka's null serdes meaning the configured
default. Serdes follow the data where streamlet can tell what it is: a function with a return annotation
(`def length(line: str) -> int`) gives its results that type's serde (`typed_serdes.serde_for_type`), and a
re-keying operation (`select_key`, `group_by`) whose key type is not declared keeps the stream's key serde
rather than falling back to bytes, so `repartition()` and the grouped aggregation write what the stream
carries. Otherwise value-changing operations drop the value serde and `map`/`flat_map` both, where Kafka
Streams drops them.
"""

from __future__ import annotations

import heapq
import re
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any, overload

from streamlet.errors import TopologyError
from streamlet.serdes import BytesSerde, LongSerde, Serde, SerdeLike, resolve_serde
from streamlet.topology import foreign_key_joins, joins, ktable, optimizer, stream_joins
from streamlet.topology import nodes as n
from streamlet.topology.branch import BRANCH_NAME, BRANCHCHILD_NAME, MERGE_NAME, Branched, Splitter
from streamlet.topology.change import ChangeSerde
from streamlet.topology.global_ktable import GLOBAL_JOIN_NAME, GlobalKTable
from streamlet.topology.join_windows import JoinWindows, StreamJoined
from streamlet.topology.nodes import (
    NodeSpec,
    ProcessorSpec,
    SinkSpec,
    SourceSpec,
    StoreSpec,
    ValueGetterSpec,
    validate_name,
)
from streamlet.topology.pre_aggregation import PreAggregation, for_aggregate, for_count, for_reduce, preaggregate_name
from streamlet.topology.session_windows import SessionWindowedSerde, SessionWindows
from streamlet.topology.sliding_windows import SlidingWindows
from streamlet.topology.subscription_wrappers import (
    SubscriptionResponseWrapper,
    SubscriptionResponseWrapperSerde,
    SubscriptionWrapperSerde,
)
from streamlet.topology.suppressed import Suppressed
from streamlet.topology.table_joined import TableJoined, resolve_table_joined
from streamlet.topology.topology import Topology
from streamlet.topology.windows import TimeWindowedSerde, TimeWindows
from streamlet.typed_serdes import check_serde_fits, element_type, result_type, serde_for_type

SOURCE_NAME = "KSTREAM-SOURCE-"
REPARTITION_NAME = "KSTREAM-REPARTITION-"
PROCESSOR_NAME = "KSTREAM-PROCESSOR-"
SINK_NAME = "KSTREAM-SINK-"
FILTER_NAME = "KSTREAM-FILTER-"
PEEK_NAME = "KSTREAM-PEEK-"
FLATMAP_NAME = "KSTREAM-FLATMAP-"
FLATMAPVALUES_NAME = "KSTREAM-FLATMAPVALUES-"
MAP_NAME = "KSTREAM-MAP-"
MAPVALUES_NAME = "KSTREAM-MAPVALUES-"
KEY_SELECT_NAME = "KSTREAM-KEY-SELECT-"
FOREACH_NAME = "KSTREAM-FOREACH-"
REDUCE_NAME = "KSTREAM-REDUCE-"
AGGREGATE_NAME = "KSTREAM-AGGREGATE-"
TOSTREAM_NAME = "KTABLE-TOSTREAM-"
SUPPRESS_NAME = "KTABLE-SUPPRESS-"
STATE_STORE_NAME = "STATE-STORE-"
REPARTITION_TOPIC_SUFFIX = "-repartition"
_GENERATED_NAME = re.compile(r"KSTREAM.*-[0-9]{10}")

_DEFAULT_SERDE: Serde = BytesSerde()


def _serde(value: SerdeLike, argument: str) -> Serde | None:
    try:
        return resolve_serde(value)
    except (TypeError, ValueError) as exc:
        raise TopologyError(f"{argument}: {exc}") from exc


def _first(serde: Serde | None, fallback: Serde | None) -> Serde | None:
    return fallback if serde is None else serde


def _or_default(serde: Serde | None) -> Serde:
    return _DEFAULT_SERDE if serde is None else serde


def _typed(fn: object, fallback: Serde | None, *, items: bool = False) -> Serde | None:
    """The serde of what `fn` returns (of its items, for `items`), when its annotation says; else `fallback`."""
    tp = result_type(fn)
    if items:
        tp = element_type(tp) if tp is not None else None
    return fallback if tp is None else serde_for_type(tp)


def _require_callable(fn: object, what: str) -> None:
    if not callable(fn):
        raise TopologyError(f"{what} must be callable, got {fn!r}")


class _GraphNode:
    """A node of Kafka Streams' logical graph (`GraphNode`): writes one or more topology nodes."""

    __slots__ = (
        "name",
        "priority",
        "parents",
        "children",
        "write",
        "key_changing",
        "value_changing",
        "merge_node",
        "repartition",
        "self_join",
    )

    def __init__(self, name: str, write: Callable[[tuple[str, ...], _Topology], None] | None) -> None:
        self.name = name
        self.priority = 0
        self.parents: dict[_GraphNode, None] = {}  # LinkedHashSet
        self.children: dict[_GraphNode, None] = {}
        self.write = write  # write(parent_names, topology_under_construction)
        # what streamlet.topology.optimizer looks at (Kafka's GraphNode flags, OptimizableRepartitionNode)
        self.key_changing = False
        self.value_changing = False
        self.merge_node = False
        self.repartition: optimizer.Repartition | None = None
        self.self_join: optimizer.SelfJoin | None = None


class _Topology:
    """The physical topology written from the graph (Kafka's InternalTopologyBuilder), in write order."""

    def __init__(self) -> None:
        self.nodes: dict[str, NodeSpec] = {}
        self.stores: dict[str, StoreSpec] = {}
        self.store_users: dict[str, list[str]] = {}
        self.internal_topics: dict[str, None] = {}
        self.source_changelogs: dict[str, str] = {}  # store -> the source topic that is its changelog

    def add(self, spec: NodeSpec) -> None:
        if spec.name in self.nodes:
            raise TopologyError(f"Invalid topology: Processor {spec.name} is already added.")
        self.nodes[spec.name] = spec

    def add_store(self, store: StoreSpec, processor: str) -> None:
        if store.name in self.stores:
            raise TopologyError(f"Invalid topology: StateStore {store.name} is already added.")
        self.stores[store.name] = store
        self.store_users[store.name] = [processor]


class _InternalBuilder:
    """Kafka's InternalStreamsBuilder: name counter, logical graph, and its build order."""

    def __init__(self) -> None:
        self.index = 0
        self.priority = 0
        self.root = _GraphNode("root", None)
        self.names: set[str] = set()  # to report duplicate names at the DSL call, not at build()
        self.store_names: set[str] = set()
        self.topic_to_source: dict[str, str] = {}
        self.state_stores: dict[str, StoreSpec] = {}  # declared with StreamsBuilder.add_store
        self.join_repartitions: dict[_GraphNode, _GraphNode] = {}  # a stream's last join repartition
        self.null_key_relaxed: set[_GraphNode] = set()  # left joins, which join null keys too
        self.reuse_ktable_source_topics = False  # set per build by streamlet.topology.optimizer
        self.key_changing_repartitions: dict[_GraphNode, dict[_GraphNode, None]] = {}  # see optimizer.track
        self.merge_nodes: dict[_GraphNode, None] = {}

    def new_processor_name(self, prefix: str) -> str:
        name = f"{prefix}{self.index:010d}"
        self.index += 1
        return name

    def new_store_name(self, prefix: str) -> str:
        name = f"{prefix}{STATE_STORE_NAME}{self.index:010d}"
        self.index += 1
        return name

    def name_or_generate(self, name: str | None, prefix: str) -> str:
        """`NamedInternal#orElseGenerateWithPrefix`: a given name still burns a counter value."""
        if name is not None:
            validate_name(name)
        generated = self.new_processor_name(prefix)
        return generated if name is None else name

    def claim(self, *names: str) -> None:
        for name in names:
            if name in self.names:
                raise TopologyError(f"Invalid topology: Processor {name} is already added.")
        self.names.update(names)

    def claim_store(self, name: str) -> None:
        if name in self.store_names:
            raise TopologyError(f"Invalid topology: StateStore {name} is already added.")
        self.store_names.add(name)

    def claim_topics(self, source: str, topics: Iterable[str]) -> None:
        for topic in topics:
            if topic in self.topic_to_source:
                raise TopologyError(
                    f"Invalid topology: Topic {topic} has already been registered by another source "
                    f"({self.topic_to_source[topic]}); read it once and reuse the KStream"
                )
        for topic in topics:
            self.topic_to_source[topic] = source

    def add_graph_node(self, parent: _GraphNode, child: _GraphNode) -> None:
        """`addGraphNode`: links the nodes and (re)sets the child's build priority, as Kafka does."""
        parent.children[child] = None
        child.parents[parent] = None
        child.priority = self.priority
        self.priority += 1
        optimizer.track(self, child)

    def merged_repartition(self, topic: str, key_serde: Serde | None, value_serde: Serde | None) -> _GraphNode:
        """The repartition `merge.repartition.topics` puts right after a key-changing node (Kafka's
        `createRepartitionNode`: createRepartitionedSource with the first merged topic's name)."""
        for generated in (SINK_NAME, FILTER_NAME, SOURCE_NAME):  # burnt, for compatibility
            self.new_processor_name(generated)
        # unclaimed: the first merged repartition, whose names these may be, is never written
        sink, filter_, source = topic + "-sink", topic + "-filter", topic + "-source"
        return _repartition_node(self, topic, sink, filter_, source, _or_default(key_serde), _or_default(value_serde))

    def build(self) -> _Topology:
        """`buildAndOptimizeTopology` (no optimizations): write nodes in build-priority order."""
        topology = _Topology()
        written: set[_GraphNode] = set()
        heap: list[tuple[int, int, _GraphNode]] = [(self.root.priority, 0, self.root)]
        seq = 1
        while heap:
            node = heapq.heappop(heap)[2]
            if node not in written and all(parent in written for parent in node.parents):
                if node.write is not None:
                    node.write(tuple(parent.name for parent in node.parents), topology)
                written.add(node)
            for child in node.children:
                heapq.heappush(heap, (child.priority, seq, child))
                seq += 1
        return topology


class StreamsBuilder:
    """Entry point of the DSL: `stream()` the input topics, chain operations, then `build()`."""

    def __init__(self) -> None:
        self._internal = _InternalBuilder()

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
            _or_default(_serde(key_serde, "key_serde")),
            _or_default(_serde(value_serde, "value_serde")),
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
        ks = _serde(key_serde, "key_serde")
        vs = _serde(value_serde, "value_serde")
        internal = self._internal
        source_name = internal.name_or_generate(name, SOURCE_NAME)
        internal.claim(source_name)
        internal.claim_topics(source_name, topic_list)
        spec = SourceSpec(source_name, (), tuple(topic_list), _or_default(ks), _or_default(vs))
        node = _GraphNode(source_name, lambda parents, topology: topology.add(spec))
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


def _processor_node(
    internal: _InternalBuilder,
    parent: _GraphNode,
    name: str,
    op: str,
    fn: Callable[..., Any] | None = None,
) -> _GraphNode:
    internal.claim(name)

    def write(parents: tuple[str, ...], topology: _Topology) -> None:
        topology.add(ProcessorSpec(name, parents, op, fn=fn))

    node = _GraphNode(name, write)
    node.key_changing = op in (n.SELECT_KEY, n.MAP, n.FLAT_MAP)
    node.value_changing = op in (n.MAP_VALUES, n.FLAT_MAP_VALUES)
    internal.add_graph_node(parent, node)
    return node


class KStream:
    """A record stream. Every operation returns a new KStream (or grouped stream / table)."""

    __slots__ = ("_builder", "_node", "_key_serde", "_value_serde", "_repartition_required")

    def __init__(
        self,
        builder: _InternalBuilder,
        node: _GraphNode,
        key_serde: Serde | None,
        value_serde: Serde | None,
        repartition_required: bool,
    ) -> None:
        self._builder = builder
        self._node = node
        self._key_serde = key_serde
        self._value_serde = value_serde
        self._repartition_required = repartition_required

    @property
    def node_name(self) -> str:
        """Name of the processor node this stream comes out of."""
        return self._node.name

    def _processor(
        self,
        prefix: str,
        op: str,
        fn: Callable[..., Any],
        name: str | None,
        *,
        key_serde: Serde | None,
        value_serde: Serde | None,
        repartition_required: bool,
    ) -> KStream:
        _require_callable(fn, op)
        node_name = self._builder.name_or_generate(name, prefix)
        node = _processor_node(self._builder, self._node, node_name, op, fn)
        return KStream(self._builder, node, key_serde, value_serde, repartition_required)

    def filter(self, predicate: Callable[[Any, Any], bool], *, name: str | None = None) -> KStream:
        """Keep records for which `predicate(key, value)` is true."""
        return self._processor(
            FILTER_NAME,
            n.FILTER,
            predicate,
            name,
            key_serde=self._key_serde,
            value_serde=self._value_serde,
            repartition_required=self._repartition_required,
        )

    def filter_not(self, predicate: Callable[[Any, Any], bool], *, name: str | None = None) -> KStream:
        """Drop records for which `predicate(key, value)` is true."""
        return self._processor(
            FILTER_NAME,
            n.FILTER_NOT,
            predicate,
            name,
            key_serde=self._key_serde,
            value_serde=self._value_serde,
            repartition_required=self._repartition_required,
        )

    def map_values(self, mapper: Callable[[Any], Any], *, name: str | None = None) -> KStream:
        """`value -> mapper(value)`; the key is unchanged, so no repartition is needed later."""
        return self._processor(
            MAPVALUES_NAME,
            n.MAP_VALUES,
            mapper,
            name,
            key_serde=self._key_serde,
            value_serde=_typed(mapper, None),
            repartition_required=self._repartition_required,
        )

    def flat_map_values(self, mapper: Callable[[Any], Iterable[Any]], *, name: str | None = None) -> KStream:
        """One record per element of `mapper(value)`, each with the original key."""
        return self._processor(
            FLATMAPVALUES_NAME,
            n.FLAT_MAP_VALUES,
            mapper,
            name,
            key_serde=self._key_serde,
            value_serde=_typed(mapper, None, items=True),
            repartition_required=self._repartition_required,
        )

    def map(self, mapper: Callable[[Any, Any], tuple[Any, Any]], *, name: str | None = None) -> KStream:
        """`(key, value) -> mapper(key, value)`, a new `(key, value)` pair (marks the stream for repartition)."""
        return self._processor(
            MAP_NAME, n.MAP, mapper, name, key_serde=None, value_serde=None, repartition_required=True
        )

    def flat_map(self, mapper: Callable[[Any, Any], Iterable[tuple[Any, Any]]], *, name: str | None = None) -> KStream:
        """One record per `(key, value)` pair of `mapper(key, value)` (marks the stream for repartition)."""
        return self._processor(
            FLATMAP_NAME, n.FLAT_MAP, mapper, name, key_serde=None, value_serde=None, repartition_required=True
        )

    def select_key(self, mapper: Callable[[Any, Any], Any], *, name: str | None = None) -> KStream:
        """New key `mapper(key, value)`, same value (marks the stream for repartition)."""
        return self._processor(
            KEY_SELECT_NAME,
            n.SELECT_KEY,
            mapper,
            name,
            key_serde=_typed(mapper, self._key_serde),
            value_serde=self._value_serde,
            repartition_required=True,
        )

    def peek(self, action: Callable[[Any, Any], Any], *, name: str | None = None) -> KStream:
        """Call `action(key, value)` and pass the record on unchanged."""
        return self._processor(
            PEEK_NAME,
            n.PEEK,
            action,
            name,
            key_serde=self._key_serde,
            value_serde=self._value_serde,
            repartition_required=self._repartition_required,
        )

    def foreach(self, action: Callable[[Any, Any], Any], *, name: str | None = None) -> None:
        """Call `action(key, value)` for every record (a terminal operation)."""
        self._processor(
            FOREACH_NAME,
            n.FOREACH,
            action,
            name,
            key_serde=None,
            value_serde=None,
            repartition_required=False,
        )

    def to(
        self,
        topic: str,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        *,
        name: str | None = None,
    ) -> None:
        """Write the stream to `topic` (Kafka's `to(topic, Produced)`); serdes default to the stream's."""
        if not isinstance(topic, str) or not topic:
            raise TopologyError(f"to() needs a non-empty topic name, got {topic!r}")
        ks = _first(_serde(key_serde, "key_serde"), self._key_serde)
        vs = _first(_serde(value_serde, "value_serde"), self._value_serde)
        builder = self._builder
        sink_name = builder.name_or_generate(name, SINK_NAME)
        builder.claim(sink_name)
        key_serde_, value_serde_ = _or_default(ks), _or_default(vs)

        def write(parents: tuple[str, ...], topology: _Topology) -> None:
            topology.add(SinkSpec(sink_name, parents, topic, key_serde_, value_serde_))

        builder.add_graph_node(self._node, _GraphNode(sink_name, write))

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
        _require_callable(key_selector, "group_by key_selector")
        ks = _serde(key_serde, "key_serde")
        key_type = result_type(key_selector)
        if ks is None:
            ks = _typed(key_selector, self._key_serde)
        else:
            check_serde_fits(ks, key_type, "group_by key_serde")
        vs = _first(_serde(value_serde, "value_serde"), self._value_serde)
        select_name = self._builder.name_or_generate(name, KEY_SELECT_NAME)
        node = _processor_node(self._builder, self._node, select_name, n.SELECT_KEY, key_selector)
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
        ks = _first(_serde(key_serde, "key_serde"), self._key_serde)
        vs = _first(_serde(value_serde, "value_serde"), self._value_serde)
        if name is not None:
            validate_name(name)
        return KGroupedStream(self._builder, self._node, ks, vs, self._repartition_required, name)

    def repartition(
        self, name: str | None = None, *, key_serde: SerdeLike = None, value_serde: SerdeLike = None
    ) -> KStream:
        """Write through the repartition topic `<application_id>-<name>-repartition` (Kafka's `repartition`)."""
        ks = _first(_serde(key_serde, "key_serde"), self._key_serde)
        vs = _first(_serde(value_serde, "value_serde"), self._value_serde)
        if name is not None:
            validate_name(name)
        prefix = name if name is not None else self._builder.new_processor_name(REPARTITION_NAME)
        grouped = KGroupedStream(self._builder, self._node, ks, vs, True, None)
        node = grouped._repartition(prefix, optimizable=False)  # Kafka's UnoptimizableRepartitionNode
        return KStream(self._builder, node, ks, vs, repartition_required=False)

    def process(
        self,
        factory: Callable[[Any], Callable[[Any, Any], None]],
        *,
        stores: Iterable[str] = (),
        name: str | None = None,
    ) -> KStream:
        """A user processor: `factory(context)` runs once per task and returns `fn(key, value)`.

        `stores` are names given to `StreamsBuilder.add_store`; the processor reads them through
        `context.get_state_store(name)`. The context (`streamlet.runtime.processor_context`) also
        `forward()`s records to what follows on the returned stream and `schedule()`s punctuators. As in
        Kafka Streams the result has no serdes and may have new keys (a later grouping repartitions).
        """
        _require_callable(factory, "process factory")
        builder = self._builder
        store_names = tuple(stores)
        declared = builder.state_stores
        for store in store_names:
            if store not in declared:
                raise TopologyError(f"process() uses store {store!r}, which was not declared with add_store()")
        # a given name burns no counter value here (Kafka's process() takes `new NamedInternal(named).name()`)
        processor = validate_name(name) if name is not None else builder.new_processor_name(PROCESSOR_NAME)
        builder.claim(processor)

        def write(parents: tuple[str, ...], topology: _Topology) -> None:
            topology.add(ProcessorSpec(processor, parents, n.PROCESS, stores=store_names, fn=factory))
            for store in store_names:
                if store in topology.stores:
                    topology.store_users[store].append(processor)
                else:
                    topology.add_store(declared[store], processor)

        node = _GraphNode(processor, write)
        builder.add_graph_node(self._node, node)
        return KStream(builder, node, None, None, repartition_required=True)

    def split(self, *, name: str | None = None) -> BranchedKStream:
        """Route each record to the first branch whose predicate holds (Kafka's `split(Named)`); `name` is
        the splitter's name and the prefix of its branches' names."""
        return BranchedKStream(self, name)

    def merge(self, other: KStream, *, name: str | None = None) -> KStream:
        """The records of both streams, each as it arrives (Kafka's `merge`); the serdes are dropped."""
        if not isinstance(other, KStream) or other._builder is not self._builder:
            raise TopologyError(f"merge() takes a KStream of the same StreamsBuilder, got {other!r}")
        builder = self._builder
        merge_name = builder.name_or_generate(name, MERGE_NAME)
        builder.claim(merge_name)

        def write(parents: tuple[str, ...], topology: _Topology) -> None:
            topology.add(ProcessorSpec(merge_name, parents, n.PASS_THROUGH))

        node = _GraphNode(merge_name, write)
        node.merge_node = True
        builder.add_graph_node(self._node, node)
        builder.add_graph_node(other._node, node)
        required = self._repartition_required or other._repartition_required
        return KStream(builder, node, None, None, repartition_required=required)

    @overload
    def join(
        self,
        other: KTable,
        joiner: Callable[[Any, Any], Any],
        /,
        *,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        name: str | None = None,
    ) -> KStream: ...

    @overload
    def join(
        self,
        other: KStream,
        joiner: Callable[[Any, Any], Any],
        windows: JoinWindows,
        /,
        *,
        stream_joined: StreamJoined | None = None,
    ) -> KStream: ...

    @overload
    def join(
        self,
        other: GlobalKTable,
        key_selector: Callable[[Any, Any], Any],
        joiner: Callable[[Any, Any], Any],
        /,
        *,
        name: str | None = None,
    ) -> KStream: ...

    def join(
        self,
        other: KTable | KStream | GlobalKTable,
        joiner_or_key_selector: Callable[[Any, Any], Any],
        windows_or_joiner: Any = None,
        /,
        *,
        windows: JoinWindows | None = None,
        stream_joined: StreamJoined | None = None,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        name: str | None = None,
    ) -> KStream:
        """`joiner(value, other_value)` for each record that has a partner (Kafka's `join`).

        With a KTable: the table's current value for the record's key (Kafka's `join(KTable)`); records with a
        null key or value are dropped; the result keeps the record's key and timestamp. A re-keyed stream is
        repartitioned first, with `key_serde` / `value_serde` (Kafka's `Joined`), default the stream's. The
        stream's and the table's topics must have equal partition counts.

        With a KStream and `windows` (`JoinWindows`): every pair of records of the same key whose timestamps
        are within the windows, in both directions, at the later of the two timestamps (see
        `streamlet.topology.join_windows`); `stream_joined` gives the serdes, a name and a store name (Kafka's
        `StreamJoined`).

        With a GlobalKTable, `join(global_table, key_selector, joiner)`: the table key is
        `key_selector(key, value)` (a record mapped to None, or with a null value, is dropped); no repartition,
        no co-partitioning (Kafka's `join(GlobalKTable, KeyValueMapper, ValueJoiner)`).
        """
        return _join(
            self, other, joiner_or_key_selector, windows_or_joiner, windows, stream_joined, (key_serde, value_serde),
            name, left=False,
        )  # fmt: skip

    @overload
    def left_join(
        self,
        other: KTable,
        joiner: Callable[[Any, Any], Any],
        /,
        *,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        name: str | None = None,
    ) -> KStream: ...

    @overload
    def left_join(
        self,
        other: KStream,
        joiner: Callable[[Any, Any], Any],
        windows: JoinWindows,
        /,
        *,
        stream_joined: StreamJoined | None = None,
    ) -> KStream: ...

    @overload
    def left_join(
        self,
        other: GlobalKTable,
        key_selector: Callable[[Any, Any], Any],
        joiner: Callable[[Any, Any], Any],
        /,
        *,
        name: str | None = None,
    ) -> KStream: ...

    def left_join(
        self,
        other: KTable | KStream | GlobalKTable,
        joiner_or_key_selector: Callable[[Any, Any], Any],
        windows_or_joiner: Any = None,
        /,
        *,
        windows: JoinWindows | None = None,
        stream_joined: StreamJoined | None = None,
        key_serde: SerdeLike = None,
        value_serde: SerdeLike = None,
        name: str | None = None,
    ) -> KStream:
        """`joiner(value, other_value or None)` for every record with a value (Kafka's `leftJoin`).

        With a KTable, unlike `join`, a record with a null key is joined too (with None), as Kafka Streams 3.7+
        does. With a KStream and `windows`, a record of this stream that found no partner is emitted with None
        once stream time passes the end of its window plus the grace period (never early, KIP-633). With a
        GlobalKTable, `left_join(global_table, key_selector, joiner)`: a record whose key maps to None is
        joined with None too (Kafka's `leftJoin(GlobalKTable, ...)`).
        """
        return _join(
            self, other, joiner_or_key_selector, windows_or_joiner, windows, stream_joined, (key_serde, value_serde),
            name, left=True,
        )  # fmt: skip

    def outer_join(
        self,
        other: KStream,
        joiner: Callable[[Any, Any], Any],
        windows: JoinWindows,
        *,
        stream_joined: StreamJoined | None = None,
    ) -> KStream:
        """A windowed join in which the unmatched records of both streams are emitted once their windows close:
        `joiner(value, None)` or `joiner(None, other_value)` (Kafka's `outerJoin`)."""
        return _stream_stream_join(self, other, joiner, windows, stream_joined, left_outer=True, right_outer=True)

    def __repr__(self) -> str:
        return f"KStream({self._node.name})"


class BranchedKStream:
    """The branches of `KStream.split()`: add them with `branch()`, end with `default_branch()` or
    `no_default_branch()`, which return the branches by name (Kafka's `BranchedKStream`)."""

    __slots__ = ("_source", "_name", "_node", "_predicates", "_children", "_branches")

    def __init__(self, source: KStream, name: str | None) -> None:
        builder = source._builder
        self._source = source
        self._name = builder.name_or_generate(name, BRANCH_NAME)
        builder.claim(self._name)
        self._predicates: list[Callable[[Any, Any], Any]] = []
        self._children: list[str] = []
        self._branches: dict[str, KStream] = {}
        splitter_name, predicates, children = self._name, self._predicates, self._children

        def write(parents: tuple[str, ...], topology: _Topology) -> None:
            splitter = Splitter(tuple(predicates), tuple(children))
            topology.add(ProcessorSpec(splitter_name, parents, n.BRANCH, fn=splitter))

        self._node = _GraphNode(splitter_name, write)
        builder.add_graph_node(source._node, self._node)

    def branch(self, predicate: Callable[[Any, Any], Any], branched: Branched | None = None) -> BranchedKStream:
        """Records for which `predicate(key, value)` holds, and no earlier branch's did."""
        _require_callable(predicate, "branch predicate")
        self._predicates.append(predicate)
        self._create(branched, len(self._predicates))
        return self

    def default_branch(self, branched: Branched | None = None) -> dict[str, KStream]:
        """Records no branch took; returns every branch by name."""
        self._create(branched, 0)
        return dict(self._branches)

    def no_default_branch(self) -> dict[str, KStream]:
        """Records no branch took are dropped; returns every branch by name."""
        return dict(self._branches)

    def _create(self, branched: Branched | None, index: int) -> None:
        branched = Branched() if branched is None else branched
        if not isinstance(branched, Branched):
            raise TopologyError(f"branches are described with Branched, got {branched!r}")
        source = self._source
        builder = source._builder
        child = self._name + (str(index) if branched.name is None else branched.name)
        self._children.append(child)
        builder.new_processor_name(BRANCHCHILD_NAME)  # burnt, as Kafka does
        node = _processor_node(builder, self._node, child, n.PASS_THROUGH)
        stream = KStream(builder, node, source._key_serde, source._value_serde, source._repartition_required)
        if branched.function is not None:
            result = branched.function(stream)
            if result is not None:
                self._branches[child] = result
        elif branched.consumer is not None:
            branched.consumer(stream)
        else:
            self._branches[child] = stream

    def __repr__(self) -> str:
        return f"BranchedKStream({self._name})"


class KGroupedStream:
    """A stream grouped by key, ready for `count`, `reduce` or `aggregate`."""

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
        builder: _InternalBuilder,
        node: _GraphNode,
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
        self._repartition_node: _GraphNode | None = None  # reused when the repartition topic is user-named
        self._repartition_pre_aggregated = False

    def count(self, store_name: str | None = None, *, name: str | None = None, pre_aggregate: bool = False) -> KTable:
        """Number of records per key, in a store with int64 values (Kafka's `count()`).

        `pre_aggregate=True` counts per key upstream of the repartition topic and sends one partial count per
        key per commit instead of every record (see `streamlet.topology.pre_aggregation`).
        """
        store = self._store_name(store_name, AGGREGATE_NAME)
        processor = self._builder.name_or_generate(name, AGGREGATE_NAME)
        pre = for_count() if pre_aggregate else None
        return self._build(processor, n.COUNT, store, LongSerde(), fn=None, initializer=None, pre=pre)

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
        _require_callable(reducer, "reducer")
        store = self._store_name(store_name, REDUCE_NAME)
        processor = self._builder.name_or_generate(name, REDUCE_NAME)
        pre = for_reduce(reducer) if pre_aggregate else None
        value_serde = _or_default(self._value_serde)
        return self._build(processor, n.REDUCE, store, value_serde, fn=reducer, initializer=None, pre=pre)

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
        _require_callable(initializer, "initializer")
        _require_callable(aggregator, "aggregator")
        agg_serde = _serde(value_serde, "value_serde")
        store = self._store_name(store_name, AGGREGATE_NAME)
        processor = self._builder.name_or_generate(name, AGGREGATE_NAME)
        pre = None
        if combiner is not None:
            _require_callable(combiner, "combiner")
            pre = for_aggregate(initializer, aggregator, combiner)
        return self._build(
            processor, n.AGGREGATE, store, _or_default(agg_serde), fn=aggregator, initializer=initializer, pre=pre
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
    ) -> KTable:
        """`GroupedStreamAggregateBuilder#build` (and `#buildWindowed`, with `windows`); with `pre`, a
        pre-aggregation node before the repartition topic, which then carries partials."""
        builder = self._builder
        parent = self._node
        if pre is not None:
            self._check_pre_aggregation(processor)
            op, fn, initializer = pre.merge_op, pre.merge_fn, pre.initializer
            upstream = _processor_node(builder, self._node, preaggregate_name(processor), n.PREAGGREGATE, fn=pre.fold)
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
        key_serde = _or_default(self._key_serde)
        sessions = isinstance(windows, SessionWindows)  # a session store's values carry no timestamp, as Kafka's
        store_spec = StoreSpec(store, key_serde, store_value_serde, timestamped=not sessions, windows=windows)
        state = ktable.aggregation_state(store)

        def write(parents: tuple[str, ...], topology: _Topology) -> None:
            topology.add(
                ProcessorSpec(
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

        node = _GraphNode(processor, write)
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
        return KTable(builder, node, table_key_serde, store_value_serde, store, state, grace_ms=grace)

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
        upstream: _GraphNode | None = None,
        value_serde: Serde | None = None,
        *,
        optimizable: bool = True,
    ) -> _GraphNode:
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
            if _GENERATED_NAME.fullmatch(prefix):
                sink, filter_, source = gen_sink, gen_filter, gen_source
            else:
                sink, filter_, source = topic + "-sink", topic + "-filter", topic + "-source"
            builder.claim(filter_, sink, source)
            builder.claim_topics(source, [topic])
            key_serde = _or_default(self._key_serde)
            topic_value_serde = _or_default(self._value_serde if value_serde is None else value_serde)
            self._repartition_node = _repartition_node(
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


class _WindowedKStream:
    """What time-windowed and session-windowed streams share: their grouped stream, their windows, and
    `count`/`reduce`, named exactly as the unwindowed aggregations are (Kafka's shared aggregate builder)."""

    __slots__ = ("_grouped", "_windows")

    def __init__(self, grouped: KGroupedStream, windows: n.Windows) -> None:
        self._grouped = grouped
        self._windows = windows

    def count(self, store_name: str | None = None, *, name: str | None = None) -> KTable:
        """Records per key and window (for sessions, null values count too), in a store with int64 values."""
        grouped = self._grouped
        store = grouped._store_name(store_name, AGGREGATE_NAME)
        processor = grouped._builder.name_or_generate(name, AGGREGATE_NAME)
        return grouped._build(processor, n.COUNT, store, LongSerde(), fn=None, initializer=None, windows=self._windows)

    def reduce(
        self, reducer: Callable[[Any, Any], Any], store_name: str | None = None, *, name: str | None = None
    ) -> KTable:
        """`reducer(aggregate, value)` per key and window; a window's first value is its initial aggregate, and
        merging sessions reduces their aggregates too."""
        _require_callable(reducer, "reducer")
        grouped = self._grouped
        store = grouped._store_name(store_name, REDUCE_NAME)
        processor = grouped._builder.name_or_generate(name, REDUCE_NAME)
        value_serde = _or_default(grouped._value_serde)
        return grouped._build(
            processor, n.REDUCE, store, value_serde, fn=reducer, initializer=None, windows=self._windows
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
        _require_callable(initializer, "initializer")
        _require_callable(aggregator, "aggregator")
        agg_serde = _or_default(_serde(value_serde, "value_serde"))
        grouped = self._grouped
        store = grouped._store_name(store_name, AGGREGATE_NAME)
        processor = grouped._builder.name_or_generate(name, AGGREGATE_NAME)
        return grouped._build(
            processor, n.AGGREGATE, store, agg_serde, fn=aggregator, initializer=initializer, windows=self._windows
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
        _require_callable(initializer, "initializer")
        _require_callable(aggregator, "aggregator")
        _require_callable(merger, "merger")
        agg_serde = _or_default(_serde(value_serde, "value_serde"))
        grouped = self._grouped
        store = grouped._store_name(store_name, AGGREGATE_NAME)
        processor = grouped._builder.name_or_generate(name, AGGREGATE_NAME)
        return grouped._build(
            processor,
            n.AGGREGATE,
            store,
            agg_serde,
            fn=aggregator,
            initializer=initializer,
            windows=self._windows,
            merger=merger,
        )

    def __repr__(self) -> str:
        return f"SessionWindowedKStream({self._grouped!r}, {self._windows})"


class KTable:
    """A changelog stream: per-key aggregates, or a topic's latest values (`StreamsBuilder.table`).

    Every table carries its `_state` (see `streamlet.topology.ktable`): how it is read, whether it sends old
    values, and what it was made by (a source, an operation, an aggregation, a join or a suppression).
    """

    __slots__ = ("_builder", "_node", "_key_serde", "_value_serde", "_store_name", "_state", "_grace_ms")

    def __init__(
        self,
        builder: _InternalBuilder,
        node: _GraphNode,
        key_serde: Serde | None,
        value_serde: Serde | None,
        store_name: str,
        state: ktable.TableState,
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

    @property
    def store_name(self) -> str:
        return self._store_name

    @property
    def node_name(self) -> str:
        return self._node.name

    def to_stream(self, *, name: str | None = None) -> KStream:
        """The table's updates as a stream (emitted when the store's cache flushes, as in Kafka Streams)."""
        return _to_stream(self, name)

    def filter(
        self,
        predicate: Callable[[Any, Any], bool],
        *,
        name: str | None = None,
        store_name: str | None = None,
        value_serde: SerdeLike = None,
    ) -> KTable:
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
    ) -> KTable:
        """The rows for which `predicate(key, value)` does not hold; the others become deletes."""
        return _filter_table(self, predicate, True, name, store_name, value_serde)

    def map_values(
        self,
        mapper: Callable[[Any], Any],
        *,
        name: str | None = None,
        store_name: str | None = None,
        value_serde: SerdeLike = None,
    ) -> KTable:
        """`mapper(value)` per row (never called for a delete, which stays a delete).

        `store_name` materializes the result, its values written with `value_serde` (default: the serde of
        the mapper's annotated return type, else bytes).
        """
        return _map_values_table(self, mapper, name, store_name, value_serde)

    def suppress(self, suppressed: Suppressed) -> KTable:
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
            _or_default(self._key_serde),
            _or_default(self._value_serde),
            buffer=True,
            logged=suppressed.buffer_config.logging_enabled,
            log_config=suppressed.buffer_config.log_config,
        )

        def write(parents: tuple[str, ...], topology: _Topology) -> None:
            topology.add(ProcessorSpec(name, parents, n.SUPPRESS, stores=(store,), suppress=suppressed))
            topology.add_store(store_spec, name)

        node = _GraphNode(name, write)
        builder.add_graph_node(self._node, node)
        result = ktable.suppressed_state(state, store)
        return KTable(builder, node, self._key_serde, self._value_serde, store, result, grace_ms=self._grace_ms)

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
            return _foreign_key_join(self, other, joiner_or_extractor, joiner, False, joined, store_name, value_serde)
        _no_table_joined(table_joined)
        return _table_table_join(self, other, joiner_or_extractor, n.TABLE_JOIN_INNER, name, store_name, value_serde)

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
            return _foreign_key_join(self, other, joiner_or_extractor, joiner, True, joined, store_name, value_serde)
        _no_table_joined(table_joined)
        return _table_table_join(self, other, joiner_or_extractor, n.TABLE_JOIN_LEFT, name, store_name, value_serde)

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
        return _table_table_join(self, other, joiner, n.TABLE_JOIN_OUTER, name, store_name, value_serde)

    def __repr__(self) -> str:
        return f"KTable({self._node.name}, store={self._store_name})"


class KGroupedTable:
    """A table re-grouped by `KTable.group_by`: `count`, `reduce`, `aggregate` with adders and subtractors.

    Each aggregation reads the grouped updates from a repartition topic of its own, named after its store,
    unless the grouping was named, when they share `<name>-repartition` (Kafka's `KGroupedTableImpl`). Node
    and store names are Kafka's: `KTABLE-AGGREGATE-<n>` (`KTABLE-REDUCE-<n>`) in a store
    `KTABLE-AGGREGATE-STATE-STORE-<n>`, the topic's sink and source `KSTREAM-SINK-`/`KSTREAM-SOURCE-<n>`, or
    `<name>-sink` / `<name>-source` after a named aggregation.
    """

    __slots__ = ("_builder", "_node", "_key_serde", "_value_serde", "_repartition_name", "_repartition_node")

    def __init__(
        self,
        builder: _InternalBuilder,
        node: _GraphNode,
        key_serde: Serde | None,
        value_serde: Serde | None,
        repartition_name: str | None,
    ) -> None:
        self._builder = builder
        self._node = node
        self._key_serde = key_serde
        self._value_serde = value_serde
        self._repartition_name = repartition_name
        self._repartition_node: _GraphNode | None = None

    def count(self, store_name: str | None = None, *, name: str | None = None) -> KTable:
        """Rows per group, in a store with int64 values; a group whose rows all left keeps its count of 0."""
        return self._aggregate(
            ktable.TABLE_AGGREGATE_NAME,
            n.TABLE_AGGREGATE,
            store_name,
            name,
            LongSerde(),
            fn=ktable.count_adder,
            subtractor=ktable.count_subtractor,
            initializer=ktable.count_initializer,
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
        _require_callable(adder, "adder")
        _require_callable(subtractor, "subtractor")
        value_serde = _or_default(self._value_serde)
        return self._aggregate(
            ktable.TABLE_REDUCE_NAME, n.TABLE_REDUCE, store_name, name, value_serde, fn=adder, subtractor=subtractor
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
        _require_callable(initializer, "initializer")
        _require_callable(adder, "adder")
        _require_callable(subtractor, "subtractor")
        agg_serde = _or_default(_serde(value_serde, "value_serde"))
        return self._aggregate(
            ktable.TABLE_AGGREGATE_NAME,
            n.TABLE_AGGREGATE,
            store_name,
            name,
            agg_serde,
            fn=adder,
            subtractor=subtractor,
            initializer=initializer,
        )

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
    ) -> KTable:
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
        key_serde = _or_default(self._key_serde)
        store_spec = StoreSpec(store, key_serde, store_value_serde, timestamped=True)
        state = ktable.aggregation_state(store)

        def write(parents: tuple[str, ...], topology: _Topology) -> None:
            spec = ProcessorSpec(
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

        node = _GraphNode(processor, write)
        builder.add_graph_node(repartition, node)
        return KTable(builder, node, self._key_serde, store_value_serde, store, state)

    def _repartition(self, sink: str, source: str, topic: str) -> _GraphNode:
        """Kafka's `GroupedTableOperationRepartitionNode`: a sink and a source of Change values, no filter."""
        builder = self._builder
        validate_name(sink)
        validate_name(source)
        builder.claim(sink, source)
        builder.claim_topics(source, [topic])
        key_serde = _or_default(self._key_serde)
        value_serde = ChangeSerde(_or_default(self._value_serde))

        def write(parents: tuple[str, ...], topology: _Topology) -> None:
            topology.internal_topics[topic] = None
            topology.add(SinkSpec(sink, parents, topic, key_serde, value_serde))
            topology.add(SourceSpec(source, (), (topic,), key_serde, value_serde))

        return _GraphNode(source, write)

    def __repr__(self) -> str:
        return f"KGroupedTable({self._node.name})"


# --- source KTables and KTable operations (streamlet.topology.ktable) and stream-table joins (joins) ---


def _table(
    internal: _InternalBuilder,
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
    ks = _serde(key_serde, "key_serde")
    vs = _serde(value_serde, "value_serde")
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
    key_serde_, value_serde_ = _or_default(ks), _or_default(vs)

    def write(parents: tuple[str, ...], topology: _Topology) -> None:
        topology.add(SourceSpec(source_name, (), (topic,), key_serde_, value_serde_))
        stores = (store,) if source.materialized else ()
        topology.add(
            ProcessorSpec(
                table_source_name, (source_name,), n.TABLE_SOURCE, stores=stores, send_old_values=source.send_old_values
            )
        )
        if source.materialized:
            topology.add_store(StoreSpec(store, key_serde_, value_serde_, timestamped=True), table_source_name)
            if internal.reuse_ktable_source_topics:  # Kafka's connectSourceStoreAndTopic
                topology.source_changelogs[store] = topic

    node = _GraphNode(table_source_name, write)
    internal.add_graph_node(internal.root, node)
    return KTable(internal, node, ks, vs, store, state)


def _group_table(
    table: KTable,
    selector: Callable[[Any, Any], tuple[Any, Any]],
    key_serde: SerdeLike,
    value_serde: SerdeLike,
    name: str | None,
) -> KGroupedTable:
    """`KTableImpl#groupBy`: a KTABLE-SELECT node, which needs the table's old values (Kafka's
    `enableSendingOldValues(true)`, materializing a source table if it must)."""
    _require_callable(selector, "group_by selector")
    state = table._state
    ks = _first(_serde(key_serde, "key_serde"), table._key_serde)
    vs = _first(_serde(value_serde, "value_serde"), table._value_serde)
    internal = table._builder
    select_name = internal.name_or_generate(name, ktable.TABLE_SELECT_NAME)
    node = _processor_node(internal, table._node, select_name, n.TABLE_SELECT, selector)
    state.enable_sending_old_values(True)
    return KGroupedTable(internal, node, ks, vs, name)


def _table_table_join(
    table: KTable,
    other: KTable,
    joiner: Callable[[Any, Any], Any],
    op: str,
    name: str | None,
    store_name: str | None = None,
    value_serde: SerdeLike = None,
) -> KTable:
    """`KTableImpl#doJoin` (unmaterialized): KTABLE-JOINTHIS and -JOINOTHER nodes, each reading the other table
    through its value getter, and a KTABLE-MERGE node; names `<name>-join-this` / `-join-other` / `<name>`."""
    this_state, other_state = _table_join_sides(table, other, joiner)
    internal = table._builder
    vs = _serde(value_serde, "value_serde")
    store = _table_store_name(internal, store_name)
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
        None if store is None else StoreSpec(store, _or_default(table._key_serde), _or_default(vs), timestamped=True)
    )

    def reversed_joiner(other_value: Any, value: Any) -> Any:
        return joiner(value, other_value)

    def write(parents: tuple[str, ...], topology: _Topology) -> None:
        send_old = state.send_old_values
        for side, parent, side_op, fn, getter in (
            (this_name, table.node_name, op, joiner, other_getter),
            (other_name, other.node_name, other_op, reversed_joiner, this_getter),
        ):
            _check_joinable(merge_name, getter, topology, side)
            spec = ProcessorSpec(
                side, (parent,), side_op, stores=getter.stores, fn=fn, value_getter=getter, send_old_values=send_old
            )
            topology.add(spec)
        stores = () if store is None else (store,)
        merge = ProcessorSpec(merge_name, (this_name, other_name), n.TABLE_JOIN_MERGE, stores, send_old_values=send_old)
        topology.add(merge)
        if store_spec is not None:
            topology.add_store(store_spec, merge_name)

    node = _GraphNode(merge_name, write)
    internal.add_graph_node(table._node, node)
    internal.add_graph_node(other._node, node)
    return KTable(internal, node, table._key_serde, vs, store or merge_name, state)


def _foreign_key_join(
    table: KTable,
    other: KTable,
    extractor: Callable[..., Any],
    joiner: Callable[[Any, Any], Any],
    left_join: bool,
    table_joined: TableJoined,
    store_name: str | None,
    value_serde: SerdeLike,
) -> KTable:
    """`KTableImpl#doJoinOnForeignKey`: subscriptions go from this table to `other` through the subscription
    topic (a subscription store on the foreign side), responses come back through the response topic to a
    resolver reading this table, which feeds a KTABLE-FK-JOIN-OUTPUT table source (see
    `streamlet.topology.foreign_key_joins` for the names)."""
    _require_callable(extractor, "foreign_key_extractor")
    key_value_extractor = foreign_key_joins.key_value_extractor(extractor)
    this_state, other_state = _table_join_sides(table, other, joiner)
    internal = table._builder
    vs = _serde(value_serde, "value_serde")
    other_state.enable_sending_old_values(True)
    this_state.enable_sending_old_values(True)
    names = foreign_key_joins.foreign_key_join_names(table_joined.name, internal.new_processor_name)
    if store_name is not None:
        result_store = validate_name(store_name, "Store name")
    else:  # MaterializedInternal names it even when not materialized
        result_store = internal.new_store_name(foreign_key_joins.OUTPUT)
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
    key_serde, fk_serde = _or_default(table._key_serde), _or_default(other._key_serde)
    spec = n.ForeignKeyJoinSpec(
        names.subscription_topic,
        left_join,
        fk_serde,
        key_serde,
        _or_default(table._value_serde),
        names.subscription_store,
    )
    subscription_serde = SubscriptionWrapperSerde(key_serde)
    response_serde = SubscriptionResponseWrapperSerde(_or_default(other._value_serde))
    this_getter, other_getter = this_state.value_getter(), other_state.value_getter()  # materializes them
    source = ktable.TableSource(result_store, materialized=store_name is not None)
    state = ktable.TableState(source, None, n.TABLE_SOURCE, None)
    subscription_partitioner = foreign_key_joins.key_partitioner(table_joined.other_partitioner)
    response_partitioner = foreign_key_joins.key_partitioner(table_joined.partitioner) or _primary_partition

    def node(
        parents: tuple[_GraphNode, ...], node_name: str, write: Callable[[tuple[str, ...], _Topology], None]
    ) -> _GraphNode:
        graph_node = _GraphNode(node_name, write)
        for parent in parents:
            internal.add_graph_node(parent, graph_node)
        return graph_node

    def write_send(parents: tuple[str, ...], topology: _Topology) -> None:
        topology.add(
            ProcessorSpec(
                names.subscription_send, parents, n.FK_SUBSCRIPTION_SEND, fn=key_value_extractor, foreign_key_join=spec
            )
        )

    def write_subscription_sink(parents: tuple[str, ...], topology: _Topology) -> None:
        topology.internal_topics[names.subscription_topic] = None
        topic, partitioner = names.subscription_topic, subscription_partitioner
        topology.add(SinkSpec(names.subscription_sink, parents, topic, fk_serde, subscription_serde, partitioner))

    def write_subscription_source(parents: tuple[str, ...], topology: _Topology) -> None:
        topics = (names.subscription_topic,)
        topology.add(SourceSpec(names.subscription_source, (), topics, fk_serde, subscription_serde))

    def write_receive(parents: tuple[str, ...], topology: _Topology) -> None:
        stores = (names.subscription_store,)
        topology.add(
            ProcessorSpec(names.subscription_receive, parents, n.FK_SUBSCRIPTION_RECEIVE, stores, foreign_key_join=spec)
        )
        store = StoreSpec(names.subscription_store, BytesSerde(), subscription_serde, timestamped=True, cached=False)
        topology.add_store(store, names.subscription_receive)

    def write_subscription_join(parents: tuple[str, ...], topology: _Topology) -> None:
        getter = _check_joinable(names.result, other_getter, topology, names.subscription_join)
        topology.add(
            ProcessorSpec(
                names.subscription_join,
                parents,
                n.FK_SUBSCRIPTION_JOIN,
                getter.stores,
                value_getter=getter,
                foreign_key_join=spec,
            )
        )

    def write_foreign_table_join(parents: tuple[str, ...], topology: _Topology) -> None:
        stores = (names.subscription_store,)
        topology.add(
            ProcessorSpec(names.foreign_table_join, parents, n.FK_FOREIGN_TABLE_JOIN, stores, foreign_key_join=spec)
        )
        topology.store_users[names.subscription_store].append(names.foreign_table_join)

    def write_response_sink(parents: tuple[str, ...], topology: _Topology) -> None:
        topology.internal_topics[names.response_topic] = None
        topic, partitioner = names.response_topic, response_partitioner
        topology.add(SinkSpec(names.response_sink, parents, topic, key_serde, response_serde, partitioner))

    def write_response_source(parents: tuple[str, ...], topology: _Topology) -> None:
        topology.add(SourceSpec(names.response_source, (), (names.response_topic,), key_serde, response_serde))

    def write_response_join(parents: tuple[str, ...], topology: _Topology) -> None:
        getter = _check_joinable(names.result, this_getter, topology, names.response_join)
        topology.add(
            ProcessorSpec(
                names.response_join,
                parents,
                n.FK_RESPONSE_JOIN,
                getter.stores,
                fn=joiner,
                value_getter=getter,
                foreign_key_join=spec,
            )
        )

    value_serde_ = _or_default(vs)

    def write_result(parents: tuple[str, ...], topology: _Topology) -> None:
        stores = (result_store,) if source.materialized else ()
        send_old = source.send_old_values
        topology.add(ProcessorSpec(names.result, parents, n.TABLE_SOURCE, stores=stores, send_old_values=send_old))
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
    return KTable(internal, result, table._key_serde, vs, result_store, state)


def _no_table_joined(table_joined: TableJoined | None) -> None:
    """A primary-key join is named by `name=` (Kafka's `Named`); `TableJoined` is a foreign-key join's."""
    if table_joined is not None:
        raise TopologyError("table_joined= is for foreign-key joins (with a foreign_key_extractor); name= names this")


def _table_join_sides(
    table: KTable, other: Any, joiner: Callable[[Any, Any], Any]
) -> tuple[ktable.TableState, ktable.TableState]:
    """The states of both tables of a table-table join (primary- or foreign-key), checked."""
    if not isinstance(other, KTable) or other._builder is not table._builder:
        raise TopologyError(f"join() takes a KTable of the same StreamsBuilder, got {other!r}")
    _require_callable(joiner, "joiner")
    return table._state, other._state


def _check_joinable(join: str, getter: ValueGetterSpec, topology: _Topology, reader: str) -> ValueGetterSpec:
    """A table-table join's `reader` reads key-value stores of the topology through `getter`: connect it to
    every store the getter reads (an unmaterialized join's getter reads both its tables' stores)."""
    for store in getter.stores:
        if store not in topology.stores:
            raise TopologyError(f"join {join}: the table's store {store} is not in the topology")
        if topology.stores[store].windows is not None:
            raise TopologyError(f"join {join}: joining a windowed table ({store}) is not supported")
        topology.store_users[store].append(reader)
    return getter


def _primary_partition(topic: str, key: Any, response: SubscriptionResponseWrapper, num_partitions: int) -> int | None:
    """The response sink's partitioner: back to the partition the subscription came from."""
    return response.primary_partition


def _filter_table(
    table: KTable,
    predicate: Callable[[Any, Any], bool],
    filter_not: bool,
    name: str | None,
    store_name: str | None,
    value_serde: SerdeLike,
) -> KTable:
    """`KTable#filter` / `#filterNot`: a KTABLE-FILTER node, with its own store if `store_name` is given."""
    _require_callable(predicate, "filter predicate")
    parent = table._state
    internal = table._builder
    vs = _first(_serde(value_serde, "value_serde"), table._value_serde)
    store = _table_store_name(internal, store_name)
    node_name = internal.name_or_generate(name, ktable.TABLE_FILTER_NAME)
    op = n.TABLE_FILTER_NOT if filter_not else n.TABLE_FILTER
    state = ktable.TableState(parent.source, parent, op, predicate, store)
    # KTableFilter's constructor: old values if the parent can give them without materializing
    state.send_old_values = parent.enable_sending_old_values(False)
    node = _table_node(internal, table._node, node_name, state, table._key_serde, vs)
    return KTable(internal, node, table._key_serde, vs, store or table.store_name, state)


def _map_values_table(
    table: KTable, mapper: Callable[[Any], Any], name: str | None, store_name: str | None, value_serde: SerdeLike
) -> KTable:
    """`KTable#mapValues`: a KTABLE-MAPVALUES node (a null value stays null), with its own store if asked."""
    _require_callable(mapper, "map_values mapper")
    parent = table._state
    internal = table._builder
    vs = _first(_serde(value_serde, "value_serde"), _typed(mapper, None))
    store = _table_store_name(internal, store_name)
    node_name = internal.name_or_generate(name, ktable.TABLE_MAPVALUES_NAME)
    state = ktable.TableState(parent.source, parent, n.TABLE_MAP_VALUES, mapper, store)
    node = _table_node(internal, table._node, node_name, state, table._key_serde, vs)
    return KTable(internal, node, table._key_serde, vs, store or table.store_name, state)


def _table_store_name(internal: _InternalBuilder, store_name: str | None) -> str | None:
    if store_name is None:
        return None
    validate_name(store_name, "Store name")
    internal.claim_store(store_name)
    return store_name


def _table_node(
    internal: _InternalBuilder,
    parent: _GraphNode,
    name: str,
    state: ktable.TableState,
    key_serde: Serde | None,
    value_serde: Serde | None,
) -> _GraphNode:
    internal.claim(name)
    store = state.store

    def write(parents: tuple[str, ...], topology: _Topology) -> None:
        stores = () if store is None else (store,)
        spec = ProcessorSpec(name, parents, state.op, stores=stores, fn=state.fn, send_old_values=state.send_old_values)
        topology.add(spec)
        if store is not None:
            store_spec = StoreSpec(store, _or_default(key_serde), _or_default(value_serde), timestamped=True)
            topology.add_store(store_spec, name)

    node = _GraphNode(name, write)
    internal.add_graph_node(parent, node)
    return node


def _to_stream(table: KTable, name: str | None) -> KStream:
    """`KTable#toStream`: each update's new value (null for a delete), with the update's timestamp."""
    internal = table._builder
    node_name = internal.name_or_generate(name, TOSTREAM_NAME)
    # an aggregation or a suppression forwards plain values (with the replaced one in its record context)
    state = table._state
    op = n.TO_STREAM if state.aggregation or state.op == n.SUPPRESS else n.TABLE_TO_STREAM
    node = _processor_node(internal, table._node, node_name, op)
    return KStream(internal, node, table._key_serde, table._value_serde, repartition_required=False)


def _stream_table_join(
    stream: KStream,
    table: KTable,
    joiner: Callable[[Any, Any], Any],
    *,
    left: bool,
    key_serde: SerdeLike,
    value_serde: SerdeLike,
    name: str | None,
) -> KStream:
    """`joiner(stream_value, table_value)` per stream record whose key the table has (or, `left`, always)."""
    if not isinstance(table, KTable):
        raise TopologyError(f"join() takes a KTable, got {table!r}")
    if table._builder is not stream._builder:
        raise TopologyError("join(): the stream and the table come from different StreamsBuilders")
    _require_callable(joiner, "joiner")
    if isinstance(table._key_serde, TimeWindowedSerde):
        raise TopologyError(f"a windowed table ({table.store_name}) cannot be joined with a stream")
    if name is not None:
        validate_name(name)
    ks = _serde(key_serde, "key_serde")
    vs = _serde(value_serde, "value_serde")
    internal = stream._builder
    parent = stream._node
    if stream._repartition_required:
        parent = _repartition_for_join(stream, name if name is not None else stream.node_name, ks, vs)
    # an aggregation's table is read from its store as it is (Kafka's KStreamAggregate#view)
    getter = table._state.value_getter()
    join_name = internal.name_or_generate(name, joins.LEFTJOIN_NAME if left else joins.JOIN_NAME)
    internal.claim(join_name)
    op = n.STREAM_TABLE_LEFT_JOIN if left else n.STREAM_TABLE_JOIN

    def write(parents: tuple[str, ...], topology: _Topology) -> None:
        for store in getter.stores:
            if store not in topology.stores:
                raise TopologyError(f"join {join_name}: the table's store {store} is not in the topology")
            if topology.stores[store].windows is not None:
                raise TopologyError(f"join {join_name}: a windowed table ({store}) cannot be joined with a stream")
            topology.store_users[store].append(join_name)
        topology.add(ProcessorSpec(join_name, parents, op, stores=getter.stores, fn=joiner, value_getter=getter))

    node = _GraphNode(join_name, write)
    internal.add_graph_node(parent, node)
    if left:
        internal.null_key_relaxed.add(node)  # Kafka's GraphNode.Label.NULL_KEY_RELAXED_JOIN
    # the joined values have no serde (Kafka: "do not have serde for joined result")
    return KStream(internal, node, _first(ks, stream._key_serde), None, repartition_required=False)


def _repartition_node(
    internal: _InternalBuilder, topic: str, sink: str, filter_: str, source: str, key_serde: Serde, value_serde: Serde
) -> _GraphNode:
    """The repartition's filter, sink and source nodes; the graph node is named after the source."""

    def write(parents: tuple[str, ...], topology: _Topology) -> None:
        topology.internal_topics[topic] = None
        # null keys pass where a left join downstream joins them (Kafka 3.7+, KIP-962)
        relaxed = joins.null_key_relaxed_join_below(internal.null_key_relaxed, node)
        topology.add(
            ProcessorSpec(
                filter_,
                parents,
                n.FILTER if relaxed else n.REPARTITION_FILTER,
                fn=joins.keep_all if relaxed else None,
            )
        )
        topology.add(SinkSpec(sink, (filter_,), topic, key_serde, value_serde))
        topology.add(SourceSpec(source, (), (topic,), key_serde, value_serde))

    node = _GraphNode(source, write)
    return node


def _repartition_for_join(stream: KStream, prefix: str, key_serde: Any, value_serde: Any) -> _GraphNode:
    """`repartitionForJoin`: the names are always generated (three counter values). Like Kafka's KStreamImpl,
    a stream keeps the repartition of its last join and reuses it for an unnamed join (whose prefix is the
    stream's own name)."""
    internal = stream._builder
    cached = internal.join_repartitions.get(stream._node)
    if cached is not None and prefix == stream.node_name:
        for generated in (SINK_NAME, FILTER_NAME, SOURCE_NAME):
            internal.new_processor_name(generated)
        return cached
    ks = _first(key_serde, stream._key_serde)
    vs = _first(value_serde, stream._value_serde)
    node = KGroupedStream(internal, stream._node, ks, vs, True, None)._repartition(prefix)
    internal.join_repartitions[stream._node] = node
    return node


# --- GlobalKTables (streamlet.topology.global_ktable) and stream-global table joins ---


def _global_table(
    internal: _InternalBuilder,
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
    ks = _or_default(_serde(key_serde, "key_serde"))
    vs = _or_default(_serde(value_serde, "value_serde"))
    store = validate_name(store_name, "Store name") if store_name is not None else internal.new_store_name(topic + "-")
    generated = internal.new_processor_name(SOURCE_NAME)
    source_name = generated if name is None else validate_name(validate_name(name) + ktable.TABLE_SOURCE_SUFFIX)
    processor_name = internal.name_or_generate(name, ktable.TABLE_SOURCE_NAME)
    internal.claim(source_name, processor_name)
    internal.claim_topics(source_name, [topic])
    internal.claim_store(store)

    def write(parents: tuple[str, ...], topology: _Topology) -> None:
        topology.add(SourceSpec(source_name, (), (topic,), ks, vs, is_global=True))
        topology.add(ProcessorSpec(processor_name, (source_name,), n.TABLE_SOURCE, stores=(store,)))
        topology.add_store(StoreSpec(store, ks, vs, logged=False, timestamped=True), processor_name)

    internal.add_graph_node(internal.root, _GraphNode(processor_name, write))
    return GlobalKTable(internal, store, topic, ks, vs)


def _stream_global_table_join(
    stream: KStream,
    table: GlobalKTable,
    key_selector: Callable[[Any, Any], Any],
    joiner: Callable[[Any, Any], Any] | None,
    *,
    left: bool,
    name: str | None,
    serdes: tuple[SerdeLike, SerdeLike],
) -> KStream:
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
    _require_callable(key_selector, "key selector")
    _require_callable(joiner, "joiner")
    internal = stream._builder
    join_name = internal.name_or_generate(name, GLOBAL_JOIN_NAME)
    internal.claim(join_name)
    op = n.STREAM_GLOBAL_TABLE_LEFT_JOIN if left else n.STREAM_GLOBAL_TABLE_JOIN
    getter = ValueGetterSpec(table.store_name)

    def write(parents: tuple[str, ...], topology: _Topology) -> None:
        topology.add(ProcessorSpec(join_name, parents, op, fn=joiner, value_getter=getter, key_mapper=key_selector))

    node = _GraphNode(join_name, write)
    internal.add_graph_node(stream._node, node)
    if left:
        internal.null_key_relaxed.add(node)  # Kafka labels it NULL_KEY_RELAXED_JOIN too
    return KStream(internal, node, stream._key_serde, None, repartition_required=stream._repartition_required)


# --- KStream-KStream joins (names and stores: streamlet.topology.stream_joins) ---


def _join(
    stream: KStream,
    other: Any,
    joiner_or_key_selector: Callable[[Any, Any], Any],
    third: Any,
    windows: JoinWindows | None,
    stream_joined: StreamJoined | None,
    serdes: tuple[SerdeLike, SerdeLike],
    name: str | None,
    *,
    left: bool,
) -> KStream:
    """What `join` / `left_join` do with their arguments: the third positional one is a stream-stream join's
    windows, or a global table join's joiner."""
    key_serde, value_serde = serdes
    if isinstance(other, GlobalKTable):
        _check_join_options(stream=False, windows=windows, stream_joined=stream_joined)
        return _stream_global_table_join(
            stream, other, joiner_or_key_selector, third, left=left, name=name, serdes=serdes
        )
    if third is not None:
        if windows is not None:
            raise TopologyError("join(): the windows are given twice (positionally and as windows=)")
        windows = third
    if isinstance(other, KStream):
        _check_join_options(stream=True, key_serde=key_serde, value_serde=value_serde, name=name)
        return _stream_stream_join(
            stream, other, joiner_or_key_selector, windows, stream_joined, left_outer=left, right_outer=False
        )
    _check_join_options(stream=False, windows=windows, stream_joined=stream_joined)
    return _stream_table_join(
        stream, other, joiner_or_key_selector, left=left, key_serde=key_serde, value_serde=value_serde, name=name
    )


def _stream_stream_join(
    stream: KStream,
    other: KStream,
    joiner: Callable[[Any, Any], Any],
    windows: JoinWindows | None,
    stream_joined: StreamJoined | None,
    *,
    left_outer: bool,
    right_outer: bool,
) -> KStream:
    """`KStreamImpl#doJoin` and `KStreamImplJoin#join`: repartition a re-keyed side (`<name>-left` /
    `<name>-right`, or after the stream's node), then a windowed node per side and the join's three nodes."""
    if other._builder is not stream._builder:
        raise TopologyError("join(): the two streams come from different StreamsBuilders")
    _require_callable(joiner, "joiner")
    if not isinstance(windows, JoinWindows):
        raise TopologyError(f"a stream-stream join takes JoinWindows, got {windows!r}")
    joined = StreamJoined() if stream_joined is None else stream_joined
    if not isinstance(joined, StreamJoined):
        raise TopologyError(f"stream_joined must be a StreamJoined, got {joined!r}")
    name = joined.name
    if name is not None:
        validate_name(name)
    if joined.store_name is not None:
        validate_name(joined.store_name, "Store name")
    internal = stream._builder
    this_node, other_node = stream._node, other._node
    if stream._repartition_required:
        prefix = stream.node_name if name is None else name + "-left"
        this_node = _repartition_for_join(stream, prefix, joined.key_serde, joined.value_serde)
    if other._repartition_required:
        prefix = other.node_name if name is None else name + "-right"
        other_node = _repartition_for_join(other, prefix, joined.key_serde, joined.other_value_serde)
    names = stream_joins.join_names(
        internal.new_processor_name, name, joined.store_name, left_outer=left_outer, right_outer=right_outer
    )
    internal.claim(*names.processors)
    for store in names.stores:
        internal.claim_store(store)
    key_serde = _or_default(_first(joined.key_serde, stream._key_serde))
    this_store = stream_joins.window_store(
        names.this_store, key_serde, _or_default(_first(joined.value_serde, stream._value_serde)), windows
    )
    other_store = stream_joins.window_store(
        names.other_store, key_serde, _or_default(_first(joined.other_value_serde, other._value_serde)), windows
    )
    outer = names.outer_store

    def windowed(processor: str, store: n.StoreSpec) -> Callable[[tuple[str, ...], _Topology], None]:
        def write(parents: tuple[str, ...], topology: _Topology) -> None:
            topology.add(ProcessorSpec(processor, parents, n.STREAM_JOIN_WINDOW, stores=(store.name,)))
            topology.add_store(store, processor)

        return write

    def side(left: bool) -> ProcessorSpec:
        mine, theirs = (this_store, other_store) if left else (other_store, this_store)
        spec = n.StreamJoinSpec(
            windows, left, left_outer if left else right_outer, mine.name, theirs.name, outer, names.merge
        )
        processor = names.join_this if left else names.join_other
        parent = names.this_windowed if left else names.other_windowed
        stores = (theirs.name,) if outer is None else (theirs.name, outer)
        fn = joiner if left else _reversed(joiner)
        return ProcessorSpec(processor, (parent,), n.STREAM_JOIN, stores=stores, fn=fn, stream_join=spec)

    def write_join(parents: tuple[str, ...], topology: _Topology) -> None:
        for left in (True, False):
            spec = side(left)
            topology.add(spec)
            topology.store_users[spec.stores[0]].append(spec.name)
            if outer is not None and outer in topology.stores:
                topology.store_users[outer].append(spec.name)
            elif outer is not None:
                topology.add_store(stream_joins.outer_store(outer), spec.name)
        topology.add(ProcessorSpec(names.merge, (names.join_this, names.join_other), n.STREAM_JOIN_MERGE))

    def write_self_join(parents: tuple[str, ...], topology: _Topology) -> None:
        """Kafka's self-join processor, named as the merge, under this side's windowed node and its store."""
        spec = n.StreamJoinSpec(windows, True, left_outer, this_store.name, this_store.name, None, names.merge)
        stores = (this_store.name,)
        topology.add(
            ProcessorSpec(names.merge, (names.this_windowed,), n.STREAM_SELF_JOIN, stores, fn=joiner, stream_join=spec)
        )
        topology.store_users[this_store.name].append(names.merge)

    this_windowed = _GraphNode(names.this_windowed, windowed(names.this_windowed, this_store))
    other_windowed = _GraphNode(names.other_windowed, windowed(names.other_windowed, other_store))
    internal.add_graph_node(this_node, this_windowed)
    internal.add_graph_node(other_node, other_windowed)
    node = _GraphNode(names.merge, write_join)
    node.self_join = optimizer.SelfJoin(this_windowed, other_windowed, write_self_join)
    internal.add_graph_node(this_node, node)
    internal.add_graph_node(other_node, node)
    if left_outer:
        internal.null_key_relaxed.add(node)  # Kafka's GraphNode.Label.NULL_KEY_RELAXED_JOIN
    # no serde for the joined values; the key serde is StreamJoined's (or this stream's)
    return KStream(internal, node, _first(joined.key_serde, stream._key_serde), None, repartition_required=False)


def _check_join_options(*, stream: bool, **options: Any) -> None:
    """Each kind of join takes its own options: a stream-stream join's are in `windows` and `stream_joined`."""
    given = sorted(option for option, value in options.items() if value is not None)
    if given and stream:
        raise TopologyError(f"a stream-stream join takes JoinWindows and stream_joined=StreamJoined(...), not {given}")
    if given:
        raise TopologyError(f"{given} are for stream-stream joins; a stream-table join takes key_serde, value_serde")


def _reversed(joiner: Callable[[Any, Any], Any]) -> Callable[[Any, Any], Any]:
    """The other side's joiner takes its own value first (Kafka's `reverseJoinerWithKey`)."""

    def reversed_joiner(other_value: Any, value: Any) -> Any:
        return joiner(value, other_value)

    return reversed_joiner

"""The DSL's builder state: the logical graph, its build order, the name counter, and the serde rules.

Every DSL type (`streamlet.topology.dsl`) holds the `InternalStreamsBuilder` of its `StreamsBuilder` and the
graph node it comes out of; what each type adds to the graph is built in its own module.

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
from typing import Any

from streamlet.errors import TopologyError
from streamlet.serdes import BytesSerde, Serde, SerdeLike, resolve_serde
from streamlet.topology import nodes as n
from streamlet.topology import optimizer
from streamlet.topology.nodes import (
    NodeSpec,
    PreAggregateSpec,
    SinkSpec,
    SourceSpec,
    StoreSpec,
    StreamOperationSpec,
    TableOperationSpec,
    validate_name,
)
from streamlet.typed_serdes import element_type, result_type, serde_for_type

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
GENERATED_NAME = re.compile(r"KSTREAM.*-[0-9]{10}")

_DEFAULT_SERDE: Serde = BytesSerde()


def serde_arg(value: SerdeLike, argument: str) -> Serde | None:
    try:
        return resolve_serde(value)
    except (TypeError, ValueError) as exc:
        raise TopologyError(f"{argument}: {exc}") from exc


def first_serde(serde: Serde | None, fallback: Serde | None) -> Serde | None:
    return fallback if serde is None else serde


def or_default(serde: Serde | None) -> Serde:
    return _DEFAULT_SERDE if serde is None else serde


def typed_serde(fn: object, fallback: Serde | None, *, items: bool = False) -> Serde | None:
    """The serde of what `fn` returns (of its items, for `items`), when its annotation says; else `fallback`."""
    tp = result_type(fn)
    if items:
        tp = element_type(tp) if tp is not None else None
    return fallback if tp is None else serde_for_type(tp)


def require_callable(fn: object, what: str) -> None:
    if not callable(fn):
        raise TopologyError(f"{what} must be callable, got {fn!r}")


class GraphNode:
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

    def __init__(self, name: str, write: Callable[[tuple[str, ...], InternalTopologyBuilder], None] | None) -> None:
        self.name = name
        self.priority = 0
        self.parents: dict[GraphNode, None] = {}  # LinkedHashSet
        self.children: dict[GraphNode, None] = {}
        self.write = write  # write(parent_names, topology_under_construction)
        # what streamlet.topology.optimizer looks at (Kafka's GraphNode flags, OptimizableRepartitionNode)
        self.key_changing = False
        self.value_changing = False
        self.merge_node = False
        self.repartition: optimizer.Repartition | None = None
        self.self_join: optimizer.SelfJoin | None = None


class InternalTopologyBuilder:
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


class InternalStreamsBuilder:
    """Kafka's InternalStreamsBuilder: name counter, logical graph, and its build order."""

    def __init__(self) -> None:
        self.index = 0
        self.priority = 0
        self.root = GraphNode("root", None)
        self.names: set[str] = set()  # to report duplicate names at the DSL call, not at build()
        self.store_names: set[str] = set()
        self.topic_to_source: dict[str, str] = {}
        self.state_stores: dict[str, StoreSpec] = {}  # declared with StreamsBuilder.add_store
        self.join_repartitions: dict[GraphNode, GraphNode] = {}  # a stream's last join repartition
        self.null_key_relaxed: set[GraphNode] = set()  # left joins, which join null keys too
        self.reuse_ktable_source_topics = False  # set per build by streamlet.topology.optimizer
        self.key_changing_repartitions: dict[GraphNode, dict[GraphNode, None]] = {}  # see optimizer.track
        self.merge_nodes: dict[GraphNode, None] = {}

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

    def add_graph_node(self, parent: GraphNode, child: GraphNode) -> None:
        """`addGraphNode`: links the nodes and (re)sets the child's build priority, as Kafka does."""
        parent.children[child] = None
        child.parents[parent] = None
        child.priority = self.priority
        self.priority += 1
        optimizer.track(self, child)

    def merged_repartition(self, topic: str, key_serde: Serde | None, value_serde: Serde | None) -> GraphNode:
        """The repartition `merge.repartition.topics` puts right after a key-changing node (Kafka's
        `createRepartitionNode`: createRepartitionedSource with the first merged topic's name)."""
        for generated in (SINK_NAME, FILTER_NAME, SOURCE_NAME):  # burnt, for compatibility
            self.new_processor_name(generated)
        # unclaimed: the first merged repartition, whose names these may be, is never written
        sink, filter_, source = topic + "-sink", topic + "-filter", topic + "-source"
        return repartition_node(self, topic, sink, filter_, source, or_default(key_serde), or_default(value_serde))

    def build(self) -> InternalTopologyBuilder:
        """`buildAndOptimizeTopology` (no optimizations): write nodes in build-priority order."""
        topology = InternalTopologyBuilder()
        written: set[GraphNode] = set()
        heap: list[tuple[int, int, GraphNode]] = [(self.root.priority, 0, self.root)]
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


def processor_node(
    internal: InternalStreamsBuilder,
    parent: GraphNode,
    name: str,
    op: str,
    fn: Callable[..., Any] | None = None,
    kind: type[StreamOperationSpec | TableOperationSpec | PreAggregateSpec] = StreamOperationSpec,
) -> GraphNode:
    """A node of one user function (or none): a stateless stream operation by default, else of `kind`."""
    internal.claim(name)

    def write(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
        topology.add(kind(name, parents, op, fn=fn))

    node = GraphNode(name, write)
    node.key_changing = op in (n.SELECT_KEY, n.MAP, n.FLAT_MAP)
    node.value_changing = op in (n.MAP_VALUES, n.FLAT_MAP_VALUES)
    internal.add_graph_node(parent, node)
    return node


def repartition_node(
    internal: InternalStreamsBuilder,
    topic: str,
    sink: str,
    filter_: str,
    source: str,
    key_serde: Serde,
    value_serde: Serde,
) -> GraphNode:
    """The repartition's filter, sink and source nodes; the graph node is named after the source."""

    def write(parents: tuple[str, ...], topology: InternalTopologyBuilder) -> None:
        topology.internal_topics[topic] = None
        # null keys pass where a left join downstream joins them (Kafka 3.7+, KIP-962)
        relaxed = null_key_relaxed_join_below(internal.null_key_relaxed, node)
        topology.add(
            StreamOperationSpec(
                filter_,
                parents,
                n.FILTER if relaxed else n.REPARTITION_FILTER,
                fn=keep_all if relaxed else None,
            )
        )
        topology.add(SinkSpec(sink, (filter_,), topic, key_serde, value_serde))
        topology.add(SourceSpec(source, (), (topic,), key_serde, value_serde))

    node = GraphNode(source, write)
    return node


def keep_all(key: Any, value: Any) -> bool:
    """The predicate of a repartition's filter when null keys must pass."""
    return True


def null_key_relaxed_join_below(relaxed: set[GraphNode], node: GraphNode | None) -> bool:
    """True if a left join (in `relaxed`: it joins null keys) is downstream of `node` in the logical graph: then
    its repartition keeps null keys (Kafka's `NodesWithRelaxedNullKeyJoinDownstream`), else it drops them."""
    if node is None or not relaxed:
        return False
    seen: set[Any] = set()
    pending = list(node.children)
    while pending:
        child = pending.pop()
        if child in relaxed:
            return True
        if child not in seen:
            seen.add(child)
            pending.extend(child.children)
    return False


class StreamHandle:
    """What a KStream is: its builder, the graph node it comes out of, its serdes, and whether a grouping or join
    downstream must repartition it (its key changed). The join modules read it and return a new one, which
    `KStream` takes on (`KStreamBase.of`)."""

    __slots__ = ("_builder", "_node", "_key_serde", "_value_serde", "_repartition_required")

    def __init__(
        self,
        builder: InternalStreamsBuilder,
        node: GraphNode,
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

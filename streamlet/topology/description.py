"""`TopologyDescription`: Kafka Streams' `Topology.describe()`, printed in exactly its format.

Reproduces `InternalTopologyBuilder#describeSubtopology` and the `toString()` of its description classes:
nodes of a sub-topology are listed by descending sub-tree size, then by name; a node's `-->`/`<--` lists
come from `TreeSet`s filled while sizes are still changing, so they are replayed with Java's own hash
iteration order and red-black tree insertion (see `_java.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from streamlet.topology._java import (
    JavaTreeSet,
    copied_hash_set_order,
    hash_set_order,
    java_string_key,
)
from streamlet.topology.nodes import NodeSpec, ProcessorSpec, SinkSpec, SourceSpec


class NodeDescription:
    """One node: `Source`, `Processor` or `Sink` (see `kind`)."""

    kind = "node"

    def __init__(self, name: str) -> None:
        self.name = name
        self.size = 1  # size of the sub-tree rooted here, as Kafka Streams computes it
        self._predecessors: JavaTreeSet[NodeDescription] = JavaTreeSet(_compare_nodes)
        self._successors: JavaTreeSet[NodeDescription] = JavaTreeSet(_compare_nodes)

    @property
    def predecessors(self) -> list[NodeDescription]:
        return list(self._predecessors)

    @property
    def successors(self) -> list[NodeDescription]:
        return list(self._successors)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name})"


def _names(nodes: JavaTreeSet[NodeDescription]) -> str:
    names = [node.name for node in nodes]
    return ", ".join(names) if names else "none"


def _java_set(items: Sequence[str]) -> str:
    return "[" + ", ".join(items) + "]"


class SourceDescription(NodeDescription):
    kind = "source"

    def __init__(self, name: str, topics: Sequence[str]) -> None:
        super().__init__(name)
        self.topics = list(copied_hash_set_order(topics))  # new HashSet<>(topics)

    def __str__(self) -> str:
        return f"Source: {self.name} (topics: {_java_set(self.topics)})\n      --> {_names(self._successors)}"


class ProcessorDescription(NodeDescription):
    kind = "processor"

    def __init__(self, name: str, stores: Sequence[str]) -> None:
        super().__init__(name)
        self.stores = list(copied_hash_set_order(hash_set_order(stores)))  # new HashSet<>(HashSet)

    def __str__(self) -> str:
        return (
            f"Processor: {self.name} (stores: {_java_set(self.stores)})\n"
            f"      --> {_names(self._successors)}\n      <-- {_names(self._predecessors)}"
        )


class SinkDescription(NodeDescription):
    kind = "sink"

    def __init__(self, name: str, topic: str) -> None:
        super().__init__(name)
        self.topic = topic

    def __str__(self) -> str:
        return f"Sink: {self.name} (topic: {self.topic})\n      <-- {_names(self._predecessors)}"


def _compare_nodes(a: NodeDescription, b: NodeDescription) -> int:
    """Kafka Streams' `NodeComparator`: larger sub-tree first, then by name."""
    if a is b:
        return 0
    if a.size != b.size:
        return b.size - a.size
    ka, kb = java_string_key(a.name), java_string_key(b.name)
    return -1 if ka < kb else (1 if ka > kb else 0)


def _update_size(node: NodeDescription, delta: int) -> None:
    node.size += delta
    for predecessor in node._predecessors:
        _update_size(predecessor, delta)


@dataclass
class SubtopologyDescription:
    id: int
    nodes: list[NodeDescription] = field(default_factory=list)  # in describe() order

    def __str__(self) -> str:
        body = "".join(f"    {node}\n" for node in self.nodes)
        return f"Sub-topology: {self.id}\n{body}\n"


class GlobalStoreDescription:
    """A global store's node group (Kafka's `InternalTopologyBuilder.GlobalStore`): a source and the processor
    that writes the store, printed without the blank line a sub-topology ends with."""

    def __init__(self, id: int, source: str, processor: str, store: str, topic: str) -> None:
        self.id = id
        self.source = SourceDescription(source, [topic])
        self.processor = ProcessorDescription(processor, [store])
        self.source._successors.add(self.processor)
        self.processor._predecessors.add(self.source)

    def __str__(self) -> str:
        return (
            f"Sub-topology: {self.id} for global store (will not generate tasks)\n"
            f"    {self.source}\n    {self.processor}\n"
        )


@dataclass
class TopologyDescription:
    subtopologies: list[SubtopologyDescription] = field(default_factory=list)
    global_stores: list[GlobalStoreDescription] = field(default_factory=list)

    def __str__(self) -> str:
        # "Topologies:\n " then "  " before each sub-topology, hence the odd first indentation; sub-topologies
        # and global stores share one id sequence and print in its order.
        parts: list[SubtopologyDescription | GlobalStoreDescription] = [*self.subtopologies, *self.global_stores]
        return "Topologies:\n " + "".join(f"  {part}" for part in sorted(parts, key=lambda p: p.id))


def _describe_node(spec: NodeSpec) -> NodeDescription:
    if isinstance(spec, SourceSpec):
        return SourceDescription(spec.name, spec.topics)
    if isinstance(spec, SinkSpec):
        return SinkDescription(spec.name, spec.topic)
    assert isinstance(spec, ProcessorSpec)
    return ProcessorDescription(spec.name, spec.stores)


def describe_subtopology(subtopology_id: int, specs: Sequence[NodeSpec]) -> SubtopologyDescription:
    """`describeSubtopology`: `specs` are the group's nodes in the order they were added to the topology."""
    by_name = {spec.name: spec for spec in specs}
    # nodesByName is a HashMap filled from the node group (a HashSet filled in topology order).
    order = hash_set_order(by_name)
    described = {name: _describe_node(by_name[name]) for name in order}
    for name in order:
        node = described[name]
        for predecessor_name in by_name[name].predecessors:
            predecessor = described[predecessor_name]
            node._predecessors.add(predecessor)
            predecessor._successors.add(node)
            _update_size(predecessor, node.size)
    nodes = sorted(described.values(), key=lambda d: (-d.size, java_string_key(d.name)))
    return SubtopologyDescription(subtopology_id, nodes)

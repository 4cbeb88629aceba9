"""Topology optimizations (Kafka Streams' `topology.optimization`, `InternalStreamsBuilder#optimizeTopology`).

The config is "none" (the default), "all", or a comma-separated list of rules, parsed as Kafka's
`StreamsConfig#verifyTopologyOptimizationConfigs` does, and the rules rewrite the builder's graph before it is
written exactly as Kafka Streams 4.1 does, so a topology is the one a Java application with the same config gets:

* `reuse.ktable.source.topics`: a source KTable's store (`builder.table(topic, ..., store_name)`, or one a
  join materializes) uses its source topic as its changelog (Kafka's `TableSourceNode
  #reuseSourceTopicForChangeLog`): no `-changelog` topic is created or written, and the store is restored
  from the source topic up to the task's committed offset.
* `merge.repartition.topics`: the optimizable repartitions (aggregations' and joins', not `KStream.repartition()`'s)
  below one key-changing node, with no value-changing node between, become one topic named after the first,
  written right after the key changer (Kafka's `mergeRepartitionTopics`); below a `merge` of key-changed
  streams, below the merge node.
* `single.store.self.join` (KIP-862): a stream joined with itself keeps one window store; the join is one
  self-join processor below this side's windowed node (Kafka's `rewriteSingleStoreSelfJoin`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

from streamlet.errors import ConfigError, TopologyError
from streamlet.serdes import Serde

NO_OPTIMIZATION = "none"
OPTIMIZE = "all"
REUSE_KTABLE_SOURCE_TOPICS = "reuse.ktable.source.topics"
MERGE_REPARTITION_TOPICS = "merge.repartition.topics"
SINGLE_STORE_SELF_JOIN = "single.store.self.join"

#: Kafka's `TOPOLOGY_OPTIMIZATION_CONFIGS`, in its order.
TOPOLOGY_OPTIMIZATION_CONFIGS = (
    OPTIMIZE,
    NO_OPTIMIZATION,
    REUSE_KTABLE_SOURCE_TOPICS,
    MERGE_REPARTITION_TOPICS,
    SINGLE_STORE_SELF_JOIN,
)
_ALL_RULES = (REUSE_KTABLE_SOURCE_TOPICS, MERGE_REPARTITION_TOPICS, SINGLE_STORE_SELF_JOIN)
_SEPARATOR = re.compile(r"\s*,\s*")


def verify_topology_optimization(config: str) -> frozenset[str]:
    """The optimization rules `config` enables (Kafka's `verifyTopologyOptimizationConfigs`).

    A ConfigError names the accepted values for an unknown one and for "none"/"all" mixed with others.
    """
    accepted = ", ".join(repr(c) for c in TOPOLOGY_OPTIMIZATION_CONFIGS)
    if not isinstance(config, str):
        raise ConfigError(f"topology_optimization must be a string ({accepted}, or a comma list), got {config!r}")
    configs = _SEPARATOR.split(config)
    if (NO_OPTIMIZATION in configs or OPTIMIZE in configs) and len(configs) > 1:
        raise ConfigError(
            f"topology_optimization={config!r} is not a valid optimization config: 'none' and 'all' stand alone; "
            f"accepted values: {accepted}, or a comma list of the rules"
        )
    for conf in configs:
        if conf not in TOPOLOGY_OPTIMIZATION_CONFIGS:
            raise ConfigError(
                f"topology_optimization={config!r}: unrecognized value {conf!r}; accepted values: {accepted}, "
                "or a comma list of the rules"
            )
    return frozenset(_ALL_RULES if OPTIMIZE in configs else () if NO_OPTIMIZATION in configs else configs)


@dataclass(frozen=True)
class Repartition:
    """An optimizable repartition (Kafka's `OptimizableRepartitionNode`: an aggregation's or a join's; not
    `KStream.repartition()`'s): its topic and the serdes it was given (None: the default)."""

    topic: str
    key_serde: Serde | None
    value_serde: Serde | None


@dataclass(frozen=True)
class SelfJoin:
    """What a stream-stream join's node becomes if both its sides are one stream (Kafka's
    `StreamStreamJoinNode#setSelfJoin`): its two windowed nodes, and the writer of the self-join processor."""

    this_windowed: Any
    other_windowed: Any
    write: Callable[..., None]


class GraphNode(Protocol):
    """What the optimizer needs of the builder's graph nodes (Kafka's `GraphNode`)."""

    name: str
    priority: int
    parents: dict[Any, None]
    children: dict[Any, None]
    key_changing: bool
    value_changing: bool
    merge_node: bool
    repartition: Repartition | None
    self_join: SelfJoin | None
    write: Any


class Builder(Protocol):
    """What the optimizer needs of the builder (Kafka's `InternalStreamsBuilder`)."""

    root: Any
    reuse_ktable_source_topics: bool
    key_changing_repartitions: dict[Any, dict[Any, None]]
    merge_nodes: dict[Any, None]

    def merged_repartition(self, topic: str, key_serde: Serde | None, value_serde: Serde | None) -> Any: ...


def track(builder: Builder, node: GraphNode) -> None:
    """Kafka's `maybeAddNodeForOptimizationMetadata`, as each node joins the graph: key-changing nodes, the
    optimizable repartitions right below one (no value-changing node between), and merge nodes."""
    if node.key_changing:
        builder.key_changing_repartitions[node] = {}
    elif node.repartition is not None:
        key_changer = _key_changing_parent(node)
        if key_changer is not None:
            builder.key_changing_repartitions[key_changer][node] = None
    elif node.merge_node:
        builder.merge_nodes[node] = None


def optimize(builder: Builder, rules: frozenset[str]) -> None:
    """Apply `rules` to the builder's graph before it is written (Kafka's `optimizeTopology`)."""
    builder.reuse_ktable_source_topics = REUSE_KTABLE_SOURCE_TOPICS in rules
    if MERGE_REPARTITION_TOPICS in rules:
        _merge_repartition_topics(builder)
    if SINGLE_STORE_SELF_JOIN in rules:
        _rewrite_single_store_self_joins(builder.root, set())


def _rewrite_single_store_self_joins(node: GraphNode, visited: set[Any]) -> None:
    """Kafka's `rewriteSingleStoreSelfJoin`: a stream-stream join whose node has one parent joins a stream with
    itself; its other windowed node leaves the graph and the join becomes one self-join processor."""
    visited.add(node)
    self_join = node.self_join
    if self_join is not None and len(node.parents) == 1:
        parent = next(iter(node.parents))
        left = right = None
        for child in parent.children:
            if child.priority < node.priority:
                if child is self_join.this_windowed:
                    left = child
                elif child is self_join.other_windowed:
                    right = child
        if left is None or right is None or left.priority >= right.priority:
            raise TopologyError(
                f"self-join {node.name}: expected its windowed nodes in build order below {parent.name}"
            )
        _remove_child(parent, right)
        node.write = self_join.write
    for child in list(node.children):
        if child not in visited:
            _rewrite_single_store_self_joins(child, visited)


def _merge_repartition_topics(builder: Builder) -> None:
    """Kafka's `mergeRepartitionTopics`: the optimizable repartitions below one key-changing node become one,
    named after the first, placed right after the key changer; what was between them moves below it."""
    _update_key_changing_map_for_merge_nodes(builder)
    for key_changer, repartitions in list(builder.key_changing_repartitions.items()):
        if not repartitions:
            continue
        infos = [r.repartition for r in repartitions]
        key_serde = next((i.key_serde for i in infos if i is not None and i.key_serde is not None), None)
        value_serde = next((i.value_serde for i in infos if i is not None and i.value_serde is not None), None)
        first = infos[0]
        assert first is not None
        merged = builder.merged_repartition(first.topic, key_serde, value_serde)
        merged.priority = key_changer.priority  # written before every node below the key changer
        for replaced in repartitions:
            child = _find_parent_matching(replaced, _has_parent(key_changer))
            if child is None:
                raise TopologyError(f"found no child of the key changer {key_changer.name} above {replaced.name}")
            _add_child(merged, child)
            _remove_child(key_changer, child)
            replaced_children, replaced_parents = list(replaced.children), list(replaced.parents)
            for grandchild in replaced_children:
                for parent in replaced_parents:
                    _add_child(parent, grandchild)
            for parent in replaced_parents:
                _remove_child(parent, replaced)
            for grandchild in list(replaced.children):  # clearChildren
                grandchild.parents.pop(replaced, None)
            replaced.children.clear()
        _add_child(key_changer, merged)
        del builder.key_changing_repartitions[key_changer]


def _update_key_changing_map_for_merge_nodes(builder: Builder) -> None:
    """Kafka's `maybeUpdateKeyChangingRepartitionNodeMap`: repartitions below a merge of key-changed streams are
    merged below the merge node instead."""
    groups = builder.key_changing_repartitions
    merge_to_key_changers: dict[Any, dict[Any, None]] = {}
    for merge_node in builder.merge_nodes:
        merge_to_key_changers[merge_node] = {}
        for key_changer, repartitions in groups.items():
            below_merge = all(_find_parent_matching(r, _has_parent(merge_node)) is not None for r in repartitions)
            if below_merge and _find_parent_matching(merge_node, _has_parent(key_changer)):
                merge_to_key_changers[merge_node][key_changer] = None
    to_remove: set[Any] = set()
    for merge_node, key_changers in merge_to_key_changers.items():
        merged: dict[Any, None] = {}
        for key_changer in key_changers:
            merged.update(groups[key_changer])
            to_remove.add(key_changer)
        groups[merge_node] = merged
    for key_changer in to_remove:
        groups.pop(key_changer, None)


def _key_changing_parent(node: GraphNode) -> GraphNode | None:
    """Kafka's `getKeyChangingParentNode`: the nearest key- or value-changing ancestor, if it changes the key."""
    nearest = _find_parent_matching(node, lambda g: g.key_changing or g.value_changing)
    key_changer = _find_parent_matching(node, lambda g: g.key_changing)
    return key_changer if nearest is not None and nearest is key_changer else None


def _find_parent_matching(node: GraphNode, predicate: Callable[[Any], bool]) -> Any:
    """Kafka's `findParentNodeMatching`, quirks included: `node` itself if it matches, else the first parent
    that matches, else what the search from the *last* parent found."""
    if predicate(node):
        return node
    found = None
    for parent in node.parents:
        if predicate(parent):
            return parent
        found = _find_parent_matching(parent, predicate)
    return found


def _has_parent(parent: GraphNode) -> Callable[[Any], bool]:
    return lambda node: parent in node.parents


def _add_child(parent: GraphNode, child: GraphNode) -> None:
    parent.children[child] = None
    child.parents[parent] = None


def _remove_child(parent: GraphNode, child: GraphNode) -> None:
    if child in parent.children:
        del parent.children[child]
        child.parents.pop(parent, None)

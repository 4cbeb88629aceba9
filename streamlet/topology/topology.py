"""`Topology`: the built node graph, split into sub-topologies at repartition topics.

Sub-topology ids follow Kafka Streams' `InternalTopologyBuilder#makeNodeGroups`: nodes are visited in
the order they were added to the topology, nodes connected by an edge (or sharing a store) form one
group, and each new group takes the next id from 0.

Every name here is raw, as `describe()` shows it: a topology belongs to no application yet. Internal
topics (`<name>-repartition`, `<store>-changelog`) get their `<application_id>-` prefix from the
runtime's `TopicNames`, bound once per application.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from streamlet.errors import MissingTopicError, TopologyError
from streamlet.topology.description import GlobalStoreDescription, TopologyDescription, describe_subtopology
from streamlet.topology.nodes import (
    STREAM_JOIN_MERGE,
    ForeignKeyJoinNodeSpec,
    NodeSpec,
    ProcessorSpec,
    SinkSpec,
    SourceSpec,
    StoreSpec,
    StreamStreamJoinSpec,
    StreamTableJoinSpec,
    TableJoinSpec,
)

#: the joins that read a table through a value getter, the tables' topics copartitioned with theirs (a global
#: table is read whole, so its joins are not among them)
_TABLE_JOINS = (StreamTableJoinSpec, TableJoinSpec, ForeignKeyJoinNodeSpec)

CHANGELOG_SUFFIX = "-changelog"
REPARTITION = "repartition"
CHANGELOG = "changelog"

#: Kafka Streams' overrides for repartition topics (RepartitionTopicConfig + InternalTopicConfig).
REPARTITION_TOPIC_CONFIG: Mapping[str, str] = MappingProxyType(
    {
        "cleanup.policy": "delete",
        "segment.bytes": "52428800",
        "retention.ms": "-1",
        "message.timestamp.type": "CreateTime",
    }
)
#: Kafka Streams' overrides for key-value store changelogs (compacted).
CHANGELOG_TOPIC_CONFIG: Mapping[str, str] = MappingProxyType(
    {
        "cleanup.policy": "compact",
        "message.timestamp.type": "CreateTime",
    }
)


def changelog_topic(store_name: str) -> str:
    """The raw changelog topic name of a store (the runtime adds the application id prefix)."""
    return f"{store_name}{CHANGELOG_SUFFIX}"


@dataclass(frozen=True)
class InternalTopic:
    """A topic the application owns. `partitions` is None when it could not be computed (no counts given)."""

    name: str
    partitions: int | None
    kind: str  # "repartition" or "changelog"
    config: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Subtopology:
    """One sub-topology: its tasks are `<id>_<partition>`. Topic names here are raw (no app-id prefix)."""

    id: int
    nodes: tuple[str, ...]  # in the order they were added to the topology
    source_topics: tuple[str, ...]
    sink_topics: tuple[str, ...]
    repartition_source_topics: tuple[str, ...]
    repartition_sink_topics: tuple[str, ...]
    store_names: tuple[str, ...]  # the logged stores: each has a changelog and makes the task stateful
    unlogged_store_names: tuple[str, ...] = ()  # local only (a suppression buffer `with_logging_disabled`)
    # stores whose changelog is their source topic (`reuse.ktable.source.topics`): store -> raw topic
    source_changelogs: Mapping[str, str] = field(default_factory=dict, hash=False)

    @property
    def stateful(self) -> bool:
        """True if a task of this sub-topology has a (logged) store, hence a changelog."""
        return bool(self.store_names)

    def changelog_topics(self) -> dict[str, str]:
        """Store name -> raw changelog topic (a source KTable's source topic, when it is reused as one)."""
        return {store: self.source_changelogs.get(store) or changelog_topic(store) for store in self.store_names}


@dataclass(frozen=True)
class GlobalStore:
    """A global table's node group (Kafka's "sub-topology ... for global store"): its source node reads every
    partition of `topic` into `store` on every client; it takes a sub-topology id but generates no tasks."""

    id: int
    source: str
    processor: str
    store: str
    topic: str  # raw name


#: Kafka's `windowstore.changelog.additional.retention.ms` default: a window changelog keeps a day more.
WINDOW_CHANGELOG_ADDITIONAL_RETENTION_MS = 86_400_000


def windowed_changelog_config(retention_ms: int, retain_duplicates: bool = False) -> Mapping[str, str]:
    """A window store's changelog: compacted and deleted after the store's retention plus a day
    (Kafka's `WindowedChangelogTopicConfig`), so expired windows leave the topic too. A stream-stream join's
    store keeps every record (each under its own sequence number): only deleted, never compacted."""
    return MappingProxyType(
        {
            "cleanup.policy": "delete" if retain_duplicates else "compact,delete",
            "retention.ms": str(retention_ms + WINDOW_CHANGELOG_ADDITIONAL_RETENTION_MS),
            "message.timestamp.type": "CreateTime",
        }
    )


class _UnionFind:
    def __init__(self) -> None:
        self._parent: dict[str, str] = {}

    def add(self, item: str) -> None:
        self._parent.setdefault(item, item)

    def root(self, item: str) -> str:
        parent = self._parent
        while parent[item] != item:
            parent[item] = parent[parent[item]]
            item = parent[item]
        return item

    def unite(self, a: str, b: str) -> None:
        ra, rb = self.root(a), self.root(b)
        if ra != rb:
            self._parent[rb] = ra


class Topology:
    """A built topology: describe it, list its topics and sub-topologies (the runtime builds tasks from it)."""

    def __init__(
        self,
        nodes: tuple[NodeSpec, ...],
        stores: tuple[StoreSpec, ...],
        store_users: Mapping[str, tuple[str, ...]],
        internal_topics: tuple[str, ...],
        source_changelogs: Mapping[str, str] | None = None,
    ) -> None:
        self._nodes = nodes
        self._source_changelogs = dict(source_changelogs or {})
        self._by_name = {spec.name: spec for spec in nodes}
        self._stores = {store.name: store for store in stores}
        self._store_users = dict(store_users)
        self._internal = frozenset(internal_topics)
        self._internal_order = internal_topics
        self._groups = self._make_node_groups()
        self._global_stores = tuple(
            self._make_global_store(i, g) for i, g in enumerate(self._groups) if self._is_global_group(g)
        )
        global_ids = {g.id for g in self._global_stores}
        self._subtopologies = tuple(
            self._make_subtopology(i, g) for i, g in enumerate(self._groups) if i not in global_ids
        )
        self._by_id = {s.id: s for s in self._subtopologies}

    # --- structure -----------------------------------------------------------------------------------

    def _make_node_groups(self) -> list[list[str]]:
        grouper = _UnionFind()
        for spec in self._nodes:
            grouper.add(spec.name)
            for predecessor in spec.predecessors:
                grouper.unite(predecessor, spec.name)
        for users in self._store_users.values():
            for other in users[1:]:
                grouper.unite(users[0], other)
        groups: dict[str, list[str]] = {}
        for spec in self._nodes:  # topological (insertion) order: upstream sub-topologies come first
            groups.setdefault(grouper.root(spec.name), []).append(spec.name)
        return list(groups.values())

    def _is_global_group(self, names: list[str]) -> bool:
        return any(isinstance(spec, SourceSpec) and spec.is_global for spec in map(self._by_name.__getitem__, names))

    def _make_global_store(self, group_id: int, names: list[str]) -> GlobalStore:
        source, processor = (self._by_name[name] for name in names)  # exactly these two, as in Kafka
        assert isinstance(source, SourceSpec) and isinstance(processor, ProcessorSpec)
        return GlobalStore(group_id, source.name, processor.name, processor.stores[0], source.topics[0])

    def _make_subtopology(self, subtopology_id: int, names: list[str]) -> Subtopology:
        sources: list[str] = []
        sinks: list[str] = []
        stores: list[str] = []
        for name in names:
            spec = self._by_name[name]
            if isinstance(spec, SourceSpec):
                sources.extend(spec.topics)
            elif isinstance(spec, SinkSpec):
                if spec.topic not in sinks:
                    sinks.append(spec.topic)
            elif isinstance(spec, ProcessorSpec):
                stores.extend(s for s in spec.stores if s not in stores)
        return Subtopology(
            id=subtopology_id,
            nodes=tuple(names),
            source_topics=tuple(sources),
            sink_topics=tuple(sinks),
            repartition_source_topics=tuple(t for t in sources if t in self._internal),
            repartition_sink_topics=tuple(t for t in sinks if t in self._internal),
            store_names=tuple(s for s in stores if self._stores[s].logged),
            unlogged_store_names=tuple(s for s in stores if not self._stores[s].logged),
            source_changelogs=MappingProxyType(
                {s: self._source_changelogs[s] for s in stores if s in self._source_changelogs}
            ),
        )

    @property
    def nodes(self) -> tuple[NodeSpec, ...]:
        """All node specs, in the order they were added."""
        return self._nodes

    def node(self, name: str) -> NodeSpec:
        try:
            return self._by_name[name]
        except KeyError:
            raise TopologyError(f"no node named {name!r} in this topology") from None

    @property
    def stores(self) -> Mapping[str, StoreSpec]:
        return MappingProxyType(self._stores)

    @property
    def subtopologies(self) -> tuple[Subtopology, ...]:
        return self._subtopologies

    def subtopology(self, subtopology_id: int) -> Subtopology:
        try:
            return self._by_id[subtopology_id]
        except KeyError:
            raise TopologyError(f"no sub-topology {subtopology_id}; this topology has {sorted(self._by_id)}") from None

    @property
    def global_stores(self) -> tuple[GlobalStore, ...]:
        """The global tables' node groups (no tasks: every client reads their topics whole)."""
        return self._global_stores

    def global_topics(self) -> list[str]:
        """The topics of the global stores (raw names; always user topics)."""
        return [g.topic for g in self._global_stores]

    def describe(self) -> TopologyDescription:
        """Kafka Streams' `Topology.describe()`; `str()` of the result is its exact text."""
        subtopologies = [
            describe_subtopology(sub.id, [self._by_name[name] for name in sub.nodes]) for sub in self._subtopologies
        ]
        return TopologyDescription(
            subtopologies,
            [GlobalStoreDescription(g.id, g.source, g.processor, g.store, g.topic) for g in self._global_stores],
        )

    def __str__(self) -> str:
        return str(self.describe())

    # --- topics --------------------------------------------------------------------------------------

    def is_internal_topic(self, raw_name: str) -> bool:
        return raw_name in self._internal

    def source_topics(self) -> list[str]:
        """Every topic the topology reads."""
        return [t for sub in self._subtopologies for t in sub.source_topics]

    def sink_topics(self) -> list[str]:
        return list(dict.fromkeys(t for sub in self._subtopologies for t in sub.sink_topics))

    def external_sink_topics(self) -> dict[str, list[str]]:
        """Topics the user owns that the topology writes (they must exist before it starts, as its sources
        must), each with its sink nodes: what an error about a missing one names."""
        out: dict[str, list[str]] = {}
        for spec in self._nodes:
            if isinstance(spec, SinkSpec) and spec.topic not in self._internal:
                out.setdefault(spec.topic, []).append(f"sink node {spec.name}")
        return out

    def external_source_topics(self) -> list[str]:
        """Source topics the user owns (must exist before the application starts)."""
        return [t for t in self.source_topics() if t not in self._internal]

    def repartition_topics(self) -> list[str]:
        return list(self._internal_order)

    def changelog_topics(self) -> dict[str, str]:
        """Store name -> raw changelog topic, for every logged store."""
        return {store: topic for sub in self._subtopologies for store, topic in sub.changelog_topics().items()}

    def source_changelogs(self) -> dict[str, str]:
        """Store name -> raw source topic, for the stores whose changelog is their source topic
        (`reuse.ktable.source.topics`): nothing creates or writes these, and restoration stops at the task's
        committed offset, since the task itself reads on from there."""
        return dict(self._source_changelogs)

    def copartition_groups(self) -> list[tuple[str, ...]]:
        """Raw topics that must have equal partition counts: a stream-table join's stream and table sources, a
        stream-stream join's two streams' sources (Kafka's copartition groups; a repartition topic among them is
        sized like the others). A global table is read whole by every client, so its joins need none."""
        groups: list[tuple[str, ...]] = []
        for spec in self._nodes:
            getter = spec.value_getter if isinstance(spec, _TABLE_JOINS) else None
            if getter is not None:
                topics = self._upstream_topics(spec.name)
                for store in getter.stores:  # each store's writer: the table (or a joined table)
                    topics += self._upstream_topics(self._store_users[store][0])
                groups.append(tuple(dict.fromkeys(topics)))
            elif isinstance(spec, StreamStreamJoinSpec) and spec.op == STREAM_JOIN_MERGE:  # both streams' sources
                groups.append(tuple(dict.fromkeys(self._upstream_topics(spec.name))))
        return groups

    def _upstream_topics(self, name: str) -> tuple[str, ...]:
        topics: list[str] = []
        pending, seen = [name], set()
        while pending:
            spec = self._by_name[pending.pop()]
            if spec.name in seen:
                continue
            seen.add(spec.name)
            if isinstance(spec, SourceSpec):
                topics.extend(spec.topics)
            pending.extend(spec.predecessors)
        return tuple(topics)

    def stateful_subtopologies(self) -> frozenset[int]:
        """Ids of sub-topologies with logged stores: their tasks are the stateful tasks."""
        return frozenset(sub.id for sub in self._subtopologies if sub.stateful)

    def subtopology_partition_count(self, subtopology_id: int, partition_counts: Mapping[str, int]) -> int:
        """Number of tasks of a sub-topology: the max partition count of its source topics.

        Repartition topics are sized from their upstream sub-topology (recursively), as Kafka Streams sizes
        them, so only external topics need counts; a missing external topic is a MissingTopicError.
        """
        return _PartitionCounts(self, partition_counts).subtopology(subtopology_id)

    def internal_topics(self, partition_counts: Mapping[str, int] | None = None) -> list[InternalTopic]:
        """Repartition and changelog topics to create, with partition counts when `partition_counts`
        (of the external source topics at least) is given.

        A repartition topic gets the max partition count of the source topics of the sub-topology that
        writes it (resolved recursively through upstream repartition topics); a changelog gets the task
        count of the sub-topology owning its store. Names are raw.
        """
        resolver = None if partition_counts is None else _PartitionCounts(self, partition_counts)
        if resolver is not None:
            resolver.check_copartitioning()
        result: list[InternalTopic] = []
        for raw in self._internal_order:
            partitions = None if resolver is None else resolver.repartition(raw)
            result.append(InternalTopic(raw, partitions, REPARTITION, REPARTITION_TOPIC_CONFIG))
        for sub in self._subtopologies:
            partitions = None if resolver is None or not sub.store_names else resolver.subtopology(sub.id)
            for store, topic in sub.changelog_topics().items():
                if store in sub.source_changelogs:  # a user topic: Kafka's nonSourceChangelogTopics skip it
                    continue
                spec = self._stores[store]
                windows = spec.windows
                config = (
                    CHANGELOG_TOPIC_CONFIG
                    if windows is None
                    else windowed_changelog_config(windows.retention_ms, spec.retain_duplicates)
                )
                if spec.log_config:  # the user's configs win over the library's (Kafka's InternalTopicConfig)
                    config = MappingProxyType({**config, **dict(spec.log_config)})
                result.append(InternalTopic(topic, partitions, CHANGELOG, config))
        return result

    def __repr__(self) -> str:
        return f"Topology(subtopologies={len(self._subtopologies)}, nodes={len(self._nodes)})"


class _PartitionCounts:
    """Partition counts of source topics (raw names); repartition topics are derived from upstream when not given."""

    def __init__(self, topology: Topology, counts: Mapping[str, int]) -> None:
        self._topology = topology
        self._counts = counts
        self._writers: dict[str, list[int]] = {}
        for sub in topology.subtopologies:
            for topic in sub.repartition_sink_topics:
                self._writers.setdefault(topic, []).append(sub.id)
        self._repartition_cache: dict[str, int] = {}
        self._resolving: set[str] = set()
        self._copartitioned: dict[str, tuple[str, ...]] = {}  # repartition topic -> external topics it joins
        self._internal_groups: dict[str, tuple[str, ...]] = {}  # repartition topic -> its all-internal group
        self._groups = topology.copartition_groups()
        for group in self._groups:
            external = tuple(t for t in group if not topology.is_internal_topic(t))
            for topic in group:
                if external and topology.is_internal_topic(topic):
                    self._copartitioned[topic] = external
                elif not external:
                    self._internal_groups[topic] = group

    def check_copartitioning(self) -> None:
        """Kafka's `CopartitionedTopicsEnforcer`: the user topics of each join must agree on partitions."""
        for group in self._groups:
            counts = {t: self.topic(t) for t in group if not self._topology.is_internal_topic(t)}
            if len(set(counts.values())) > 1:
                listed = ", ".join(f"{t} ({c} partitions)" for t, c in counts.items())
                raise TopologyError(
                    f"Invalid topology: topics not co-partitioned: {listed}; a join reads its inputs partition by "
                    "partition, so give them the same number of partitions"
                )

    def topic(self, raw: str) -> int:
        if self._topology.is_internal_topic(raw):
            return self.repartition(raw)
        count = self._counts.get(raw)
        if count is None:
            raise MissingTopicError(f"source topic {raw!r} does not exist (no partition count for it); create it first")
        _check_count(raw, count)
        return count

    def repartition(self, raw: str) -> int:
        cached = self._repartition_cache.get(raw)
        if cached is not None:
            return cached
        external = self._copartitioned.get(raw)
        if external is not None:  # sized like the user topics it is joined with
            count = max(self.topic(t) for t in external)
        elif raw in self._internal_groups:  # joined with repartition topics only: all sized like the largest
            count = max(self._from_writers(t) for t in self._internal_groups[raw])
        else:
            count = self._from_writers(raw)
        self._repartition_cache[raw] = count
        return count

    def _from_writers(self, raw: str) -> int:
        """A repartition topic sized like the sub-topologies that write it (or as given, if none does)."""
        writers = self._writers.get(raw)
        if not writers:
            given = self._counts.get(raw)
            if given is None:
                raise MissingTopicError(f"repartition topic {raw!r} has no writer and no partition count")
            _check_count(raw, given)
            return given
        if raw in self._resolving:
            raise TopologyError(f"repartition topic {raw!r} is part of a cycle of sub-topologies")
        self._resolving.add(raw)
        try:
            return max(self.subtopology(sub_id) for sub_id in writers)
        finally:
            self._resolving.discard(raw)

    def subtopology(self, subtopology_id: int) -> int:
        sub = self._topology.subtopology(subtopology_id)
        if not sub.source_topics:
            raise TopologyError(f"sub-topology {subtopology_id} has no source topics")
        return max(self.topic(t) for t in sub.source_topics)


def _check_count(topic: str, count: object) -> None:
    if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
        raise TopologyError(f"topic {topic!r} has an invalid partition count: {count!r}")

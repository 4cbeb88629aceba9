"""TopicNames: the one place where a topology's raw names meet an application id (Kafka Streams'
`InternalTopologyBuilder#decorateTopic`).

Repartition topics and changelogs belong to one application, so at runtime they are
`<application_id>-<name>-repartition` and `<application_id>-<store>-changelog`; user topics keep their names.
Bound once per client, it also maps stores to changelogs and back, so nothing parses a topic name to
recover a store.
"""

from __future__ import annotations

from collections.abc import Mapping

from streamlet.errors import TopologyError
from streamlet.topology import InternalTopic, Topology


class TopicNames:
    def __init__(self, topology: Topology, application_id: str) -> None:
        self.topology = topology
        self.application_id = application_id
        prefix = f"{application_id}-"
        self._internal = {raw: prefix + raw for raw in topology.repartition_topics()}
        sourced = topology.source_changelogs()  # user topics: no prefix, not internal
        changelogs = topology.changelog_topics()
        self._changelogs = {store: raw if store in sourced else prefix + raw for store, raw in changelogs.items()}
        self._internal.update({raw: self._changelogs[s] for s, raw in changelogs.items() if s not in sourced})
        self._source_changelogs = frozenset(self._changelogs[s] for s in sourced if s in self._changelogs)
        self._stores = {topic: store for store, topic in self._changelogs.items()}
        self._global_topics = {g.store: g.topic for g in topology.global_stores}

    def topic(self, raw: str) -> str:
        """The topic actually read or written for a raw topic name."""
        return self._internal.get(raw, raw)

    def source_topics(self) -> list[str]:
        """Every topic the application reads, once each, in topology order."""
        return list(dict.fromkeys(self.topic(t) for t in self.topology.source_topics()))

    def subtopology_source_topics(self, subtopology_id: int) -> tuple[str, ...]:
        return tuple(self.topic(t) for t in self.topology.subtopology(subtopology_id).source_topics)

    def sink_topics(self) -> list[str]:
        return [self.topic(t) for t in self.topology.sink_topics()]

    def repartition_topics(self) -> list[str]:
        return [self.topic(t) for t in self.topology.repartition_topics()]

    def changelog_topics(self) -> dict[str, str]:
        """Store -> changelog topic, for every logged store."""
        return dict(self._changelogs)

    def source_changelog_topics(self) -> frozenset[str]:
        """The changelogs that are source topics (`reuse.ktable.source.topics`): read, never written."""
        return self._source_changelogs

    def changelog_topic(self, store: str) -> str:
        try:
            return self._changelogs[store]
        except KeyError:
            raise TopologyError(f"store {store!r} has no changelog in this topology") from None

    def serde_topic(self, store: str) -> str:
        """The topic a store's keys and values are serialized for: its changelog, or for a global store its
        source topic (which is its changelog)."""
        global_topic = self._global_topics.get(store)
        return self.changelog_topic(store) if global_topic is None else global_topic

    def store_of_changelog(self, topic: str) -> str:
        try:
            return self._stores[topic]
        except KeyError:
            raise TopologyError(f"topic {topic!r} is not a changelog of application {self.application_id!r}") from None

    def internal_topics(self, partition_counts: Mapping[str, int] | None = None) -> list[InternalTopic]:
        """The topology's internal topics under their runtime names (counts keyed by runtime names too)."""
        raw_counts = None
        if partition_counts is not None:
            runtime_to_raw = {runtime: raw for raw, runtime in self._internal.items()}
            raw_counts = {runtime_to_raw.get(topic, topic): count for topic, count in partition_counts.items()}
        return [
            InternalTopic(self.topic(t.name), t.partitions, t.kind, t.config)
            for t in self.topology.internal_topics(raw_counts)
        ]

"""TopologyMetadata: the topology as the runtime and the assignor see it, with runtime topic names.

Names are bound once (`names`, a `TopicNames`), and the partition grouping is cached once partition counts
are known, so mapping a task to its partitions (and changelog partitions) is a dictionary lookup on the
rebalance path.
"""

from __future__ import annotations

from collections.abc import Mapping

from aiokafka.structs import TopicPartition

from streamlet.runtime.partition_grouper import PartitionGrouper
from streamlet.runtime.topic_names import TopicNames
from streamlet.task_id import TaskId
from streamlet.topology import Topology


class TopologyMetadata:
    """Runtime view of a `Topology` for one application id."""

    def __init__(self, topology: Topology, application_id: str) -> None:
        self.topology = topology
        self.application_id = application_id
        self.names = TopicNames(topology, application_id)
        self._grouper = PartitionGrouper(self.names)
        self._stateful = topology.stateful_subtopologies()
        self._source_topics = self.names.source_topics()
        self._changelog_topics = frozenset(self.names.changelog_topics().values())
        self._source_changelogs = self.names.source_changelog_topics()
        self._groups: dict[TaskId, frozenset[TopicPartition]] = {}
        self._groups_key: tuple[tuple[str, int], ...] = ()

    def source_topics(self) -> list[str]:
        return list(self._source_topics)

    def changelog_topics(self) -> frozenset[str]:
        """The changelogs this application writes (a source topic reused as a changelog is not one)."""
        return self._changelog_topics - self._source_changelogs

    def is_source_changelog(self, partition: TopicPartition) -> bool:
        """True if `partition` is a source topic's, reused as a store's changelog (Kafka's `changelogAsSource`)."""
        return partition.topic in self._source_changelogs

    def task_partitions(self, partition_counts: Mapping[str, int]) -> dict[TaskId, frozenset[TopicPartition]]:
        key = tuple(sorted(partition_counts.items()))
        if key != self._groups_key:
            self._groups = self._grouper.group(partition_counts)
            self._groups_key = key
        return dict(self._groups)

    def partitions_of(self, task_id: TaskId) -> frozenset[TopicPartition]:
        return self._groups.get(task_id, frozenset())

    def num_tasks(self, subtopology: int) -> int:
        """How many tasks (= partitions) the sub-topology has; 0 before partition counts are known."""
        return sum(1 for task in self._groups if task.subtopology == subtopology)

    def repartitioning_subtopologies(self) -> frozenset[int]:
        """The sub-topologies that write to a repartition topic: where the order across their tasks matters to
        this application (the thread takes their tasks' records in event-time order, `EventTimeMerge`)."""
        return frozenset(sub.id for sub in self.topology.subtopologies if sub.repartition_sink_topics)

    def is_stateful(self, task: TaskId) -> bool:
        return task.subtopology in self._stateful

    def unlogged_buffers(self, task: TaskId) -> tuple[str, ...]:
        """The task's suppression buffers without a changelog (`with_logging_disabled`): local only."""
        return self.topology.subtopology(task.subtopology).unlogged_store_names

    def store_names(self, task: TaskId) -> frozenset[str]:
        return frozenset(self.topology.subtopology(task.subtopology).store_names)

    def changelog_partitions(self, task: TaskId) -> dict[str, TopicPartition]:
        """Store name -> changelog partition (the changelog partition is the task's partition)."""
        return self._grouper.changelog_partitions(task)

"""The partition grouper: which source partitions (and changelog partitions) each task owns.

Kafka Streams' `PartitionGrouper`: sub-topology S with source topics T_S has one task per partition p in
`0 .. max(partitions(t) for t in T_S) - 1`, and task `S_p` reads partition p of each of its source
topics. All source topics of one sub-topology are treated as co-partitioned (what Kafka Streams'
`CopartitionedTopicsEnforcer` requires of joins): different partition counts are a TopologyError.
A task's changelog partitions are partition p of each of its stores' changelogs.
"""

from __future__ import annotations

from collections.abc import Mapping

from aiokafka.structs import TopicPartition

from streamlet.errors import MissingTopicError, TopologyError
from streamlet.runtime.topic_names import TopicNames
from streamlet.task_id import TaskId


class PartitionGrouper:
    """Groups source partitions into tasks for one topology and application id."""

    def __init__(self, names: TopicNames) -> None:
        self.names = names
        self.topology = names.topology

    def group(self, partition_counts: Mapping[str, int]) -> dict[TaskId, frozenset[TopicPartition]]:
        """Source partitions per task, tasks in TaskId order.

        `partition_counts` maps every source topic, external and internal (runtime names, i.e. with the
        application id prefix for repartition topics), to its partition count.
        """
        tasks: dict[TaskId, frozenset[TopicPartition]] = {}
        for sub in self.topology.subtopologies:
            topics = self.names.subtopology_source_topics(sub.id)
            counts = {topic: self._count(topic, partition_counts) for topic in topics}
            if len(set(counts.values())) > 1:
                listing = ", ".join(f"{topic}={count}" for topic, count in sorted(counts.items()))
                raise TopologyError(
                    f"Invalid topology: co-partitioned source topics of sub-topology {sub.id} must have "
                    f"the same number of partitions, but they have: {listing}"
                )
            for partition in range(max(counts.values())):
                tasks[TaskId(sub.id, partition)] = frozenset(
                    TopicPartition(topic, partition) for topic, count in counts.items() if partition < count
                )
        return tasks

    def task_ids(self, partition_counts: Mapping[str, int]) -> list[TaskId]:
        return list(self.group(partition_counts))

    def stateful_task_ids(self, partition_counts: Mapping[str, int]) -> list[TaskId]:
        """Tasks with changelogged state (Kafka Streams' `ChangelogTopics#statefulTaskIds`)."""
        stateful = self.topology.stateful_subtopologies()
        return [task for task in self.group(partition_counts) if task.subtopology in stateful]

    def changelog_partitions(self, task_id: TaskId) -> dict[str, TopicPartition]:
        """Store name -> the task's changelog partition (partition number = task partition)."""
        sub = self.topology.subtopology(task_id.subtopology)
        return {
            store: TopicPartition(self.names.changelog_topic(store), task_id.partition) for store in sub.store_names
        }

    @staticmethod
    def _count(topic: str, partition_counts: Mapping[str, int]) -> int:
        count = partition_counts.get(topic)
        if count is None:
            raise MissingTopicError(
                f"source topic {topic!r} is missing (no partition metadata); create it before starting"
            )
        if not isinstance(count, int) or isinstance(count, bool) or count <= 0:
            raise TopologyError(f"source topic {topic!r} has an invalid partition count: {count!r}")
        return count


def group_partitions(names: TopicNames, partition_counts: Mapping[str, int]) -> dict[TaskId, frozenset[TopicPartition]]:
    """Shortcut for `PartitionGrouper(names).group(partition_counts)`."""
    return PartitionGrouper(names).group(partition_counts)

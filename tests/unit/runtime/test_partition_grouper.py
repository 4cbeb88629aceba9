"""The partition grouper: tasks, their source partitions and changelog partitions."""

from __future__ import annotations

import pytest
from aiokafka.structs import TopicPartition

from streamlet.errors import MissingTopicError, TopologyError
from streamlet.runtime.partition_grouper import PartitionGrouper, group_partitions
from streamlet.runtime.topic_names import TopicNames
from streamlet.task_id import TaskId
from streamlet.topology import StreamsBuilder
from tests.unit.topology.test_describe import wordcount_builder

APP = "streams-wordcount"
REPARTITION = "streams-wordcount-counts-store-repartition"


def test_wordcount_tasks() -> None:
    topology = wordcount_builder().build()
    grouper = PartitionGrouper(TopicNames(topology, APP))
    tasks = grouper.group({"streams-plaintext-input": 3, REPARTITION: 3})
    # §4.2: one task per partition of each sub-topology; task S_p reads partition p of its sources.
    assert tasks == {
        TaskId(0, 0): frozenset({TopicPartition("streams-plaintext-input", 0)}),
        TaskId(0, 1): frozenset({TopicPartition("streams-plaintext-input", 1)}),
        TaskId(0, 2): frozenset({TopicPartition("streams-plaintext-input", 2)}),
        TaskId(1, 0): frozenset({TopicPartition(REPARTITION, 0)}),
        TaskId(1, 1): frozenset({TopicPartition(REPARTITION, 1)}),
        TaskId(1, 2): frozenset({TopicPartition(REPARTITION, 2)}),
    }
    assert list(tasks) == sorted(tasks)
    assert grouper.stateful_task_ids({"streams-plaintext-input": 3, REPARTITION: 3}) == [
        TaskId(1, 0),
        TaskId(1, 1),
        TaskId(1, 2),
    ]


def test_changelog_partitions() -> None:
    grouper = PartitionGrouper(TopicNames(wordcount_builder().build(), APP))
    # Changelog partition = task partition (seed: task 1_2 checkpoints streams-wordcount-counts-store-changelog 2).
    assert grouper.changelog_partitions(TaskId(1, 2)) == {
        "counts-store": TopicPartition("streams-wordcount-counts-store-changelog", 2)
    }
    assert grouper.changelog_partitions(TaskId(0, 2)) == {}


def test_partition_counts_may_differ_between_sub_topologies() -> None:
    tasks = group_partitions(
        TopicNames(wordcount_builder().build(), APP), {"streams-plaintext-input": 2, REPARTITION: 4}
    )
    assert sorted(map(str, tasks)) == ["0_0", "0_1", "1_0", "1_1", "1_2", "1_3"]


def test_multi_topic_source_task_reads_partition_p_of_each_topic() -> None:
    builder = StreamsBuilder()
    builder.stream(["a", "b"]).to("out")
    tasks = group_partitions(TopicNames(builder.build(), "app"), {"a": 2, "b": 2})
    assert tasks[TaskId(0, 1)] == frozenset({TopicPartition("a", 1), TopicPartition("b", 1)})


def test_co_partitioned_topics_with_different_counts() -> None:
    builder = StreamsBuilder()
    builder.stream(["left", "right"]).to("out")
    with pytest.raises(TopologyError, match=r"sub-topology 0 .*left=2, right=3"):
        group_partitions(TopicNames(builder.build(), "app"), {"left": 2, "right": 3})


def test_missing_source_topic() -> None:
    with pytest.raises(MissingTopicError, match="streams-plaintext-input"):
        group_partitions(TopicNames(wordcount_builder().build(), APP), {REPARTITION: 3})
    with pytest.raises(MissingTopicError, match=REPARTITION):
        group_partitions(TopicNames(wordcount_builder().build(), APP), {"streams-plaintext-input": 3})


def test_invalid_partition_count() -> None:
    with pytest.raises(TopologyError, match="invalid partition count"):
        group_partitions(TopicNames(wordcount_builder().build(), APP), {"streams-plaintext-input": 0, REPARTITION: 1})

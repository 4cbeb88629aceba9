"""Stream time survives a restart: each commit carries its partitions' times (Kafka's offset commit metadata),
and a task that opens again resumes at them before it processes or punctuates; fake clients, real RocksDB."""

from __future__ import annotations

from pathlib import Path

import pytest
from aiokafka.structs import TopicPartition

from streamlet.runtime.task_state import TaskState
from streamlet.runtime.topic_partition_metadata import TopicPartitionMetadata
from tests.unit.runtime._fakes import FakeKafka
from tests.unit.runtime._harness import IN0, INPUT, T0, Harness, new_kafka

IN1 = TopicPartition(INPUT, 1)
GUARANTEES = ["at_least_once", "exactly_once_v2"]


def committed_time(kafka: FakeKafka, tp: TopicPartition) -> int:
    return TopicPartitionMetadata.decode(kafka.committed_metadata[tp]).partition_time


async def run_and_commit(kafka: FakeKafka, state_dir: Path, guarantee: str) -> None:
    h = Harness(kafka, state_dir, guarantee=guarantee)
    try:
        h.assign(T0)
        await h.task_manager.restore(timeout_ms=0)
        await h.poll_and_process()
        await h.task_manager.commit()
    finally:
        await h.task_manager.shutdown(clean=False)
        h.close()


@pytest.mark.parametrize("guarantee", GUARANTEES)
async def test_a_commit_carries_the_largest_timestamp_processed_per_partition(guarantee: str, tmp_path: Path) -> None:
    kafka = new_kafka()
    for timestamp in (5_000, 9_000, 7_000):  # out of order: partition time is the largest, not the last
        kafka.append(IN0, b"a", b"x", timestamp)

    await run_and_commit(kafka, tmp_path, guarantee)

    assert kafka.committed[IN0] == 3
    assert kafka.committed_metadata[IN0] == "AgAAAAAAACMo"  # Kafka's encoding of 9000 (see the codec test)
    assert IN1 not in kafka.committed  # nothing consumed there: nothing committed, as in Kafka


@pytest.mark.parametrize("guarantee", GUARANTEES)
async def test_a_reopened_task_resumes_at_its_committed_stream_time(guarantee: str, tmp_path: Path) -> None:
    kafka = new_kafka()
    kafka.append(IN0, b"a", b"x", 9_000)
    await run_and_commit(kafka, tmp_path / "first", guarantee)

    h = Harness(kafka, tmp_path / "second", guarantee=guarantee)  # another client: no local state at all
    try:
        h.assign(T0)
        await h.task_manager.restore(timeout_ms=0)
        task = h.task_manager.active[T0]
        assert task.state is TaskState.RUNNING and task.graph.stream_time == -1

        await h.task_manager.initialize_task_times()
        assert task.graph.stream_time == 9_000
        assert task.graph.partition_time(INPUT, 1) == -1  # never committed

        kafka.append(IN0, b"a", b"x", 4_000)  # an older record does not move it back
        await h.poll_and_process()
        await h.task_manager.commit()
        assert task.graph.stream_time == 9_000 and committed_time(kafka, IN0) == 9_000
    finally:
        h.close()


async def test_a_running_task_waits_for_its_committed_time_before_processing(tmp_path: Path) -> None:
    kafka = new_kafka()
    kafka.append(IN0, b"a", b"x", 1_000)
    h = Harness(kafka, tmp_path)
    try:
        h.assign(T0)
        await h.task_manager.restore(timeout_ms=0)
        h.task_manager.process(await h.consumer.getmany(max_records=10))  # polled before the time was read back

        assert h.consumer.seeks == [(IN0, 0)]  # rewound, not processed
        assert h.task_manager.active[T0].graph.stream_time == -1
        assert await h.poll_and_process() == 1
        assert h.task_manager.active[T0].graph.stream_time == 1_000
    finally:
        h.close()

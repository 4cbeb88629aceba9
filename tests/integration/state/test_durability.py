"""State survives restarts and moves: checkpoints, restoration and standby promotion on the real broker."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from aiokafka.structs import TopicPartition

from examples.wordcount.dsl import build_topology
from streamlet.config import StreamsConfig
from streamlet.runtime.kafka_streams import KafkaStreams
from streamlet.state.rocksdb_store import read_task_store_offsets
from tests.support.kafka import KafkaTestCluster, unique_name
from tests.support.waiting import poll_until
from tests.support.wordcount import SEED_LINE, expected_counts, real_text_lines, wait_for_counts

pytestmark = pytest.mark.integration


class RecordingRestoreListener:
    """Remembers, per changelog partition, where each restoration started and ended and how much it read.

    A restoration a rebalance suspends is resumed by a new one (Kafka Streams' `onRestoreSuspended`, then
    `onRestoreStart` again), whose end reports only what it read itself: `restored` adds both. It adds every
    restoration of a partition, too: a task that moves between the client's threads after one thread restored it
    is restored again from its store's offset, and that second restoration reads nothing new."""

    def __init__(self) -> None:
        self.starts: dict[TopicPartition, tuple[int, int]] = {}
        self.restored: dict[TopicPartition, int] = {}
        self._suspended: dict[TopicPartition, int] = {}

    def on_restore_start(self, tp: TopicPartition, store: str, start: int, end: int) -> None:
        self.starts[tp] = (start, end)

    def on_batch_restored(self, tp: TopicPartition, store: str, batch_end: int, count: int) -> None:
        pass

    def on_restore_suspended(self, tp: TopicPartition, store: str, total: int) -> None:
        self._suspended[tp] = self._suspended.get(tp, 0) + total

    def on_restore_end(self, tp: TopicPartition, store: str, total: int) -> None:
        self.restored[tp] = self.restored.get(tp, 0) + self._suspended.pop(tp, 0) + total


async def _setup(kafka: KafkaTestCluster) -> tuple[str, str, str]:
    source = await kafka.create_topic("plaintext", partitions=6)
    sink = await kafka.create_topic("wordcount-output", partitions=6)
    app_id = unique_name("wordcount-state")
    for suffix in ("counts-store-repartition", "counts-store-changelog"):
        kafka.track(f"{app_id}-{suffix}")
    return source, sink, app_id


def _config(kafka: KafkaTestCluster, app_id: str, state_dir: Path, **extra: object) -> StreamsConfig:
    return StreamsConfig(
        application_id=app_id,
        bootstrap_servers=kafka.bootstrap_servers,
        state_dir=str(state_dir),
        num_stream_threads=2,
        commit_interval_ms=300,
        **extra,
    )  # type: ignore[arg-type]


async def test_clean_restart_uses_checkpoints_and_restores_nothing(kafka: KafkaTestCluster, tmp_path) -> None:
    source, sink, app_id = await _setup(kafka)
    topology = build_topology(source, sink)
    first = real_text_lines(300)
    client = KafkaStreams(topology, _config(kafka, app_id, tmp_path))
    await client.start()
    try:
        await kafka.produce(source, [(None, line.encode()) for line in first])
        assert await wait_for_counts(kafka, sink, expected_counts(first)) == expected_counts(first)
    finally:
        await client.close()

    # every stateful task wrote its store's offset at the changelog end on its clean close (KIP-1035: in the store)
    changelog = f"{app_id}-counts-store-changelog"
    ends = await kafka.end_offsets(changelog, 6)
    for partition in range(6):
        task_dir = tmp_path / app_id / f"1_{partition}"
        assert not (task_dir / ".checkpoint").exists()
        stored = read_task_store_offsets(task_dir / "rocksdb")
        assert stored == {TopicPartition(changelog, partition): ends[partition] - 1}

    listener = RecordingRestoreListener()
    client = KafkaStreams(topology, _config(kafka, app_id, tmp_path), restore_listener=listener)
    await client.start()
    try:
        second = real_text_lines(600)[300:] + [SEED_LINE]
        await kafka.produce(source, [(None, line.encode()) for line in second])
        expected = expected_counts(first + second)
        assert await wait_for_counts(kafka, sink, expected) == expected
        # restoration started at the changelog end: nothing was re-read
        assert len(listener.starts) == 6
        for tp, (start, end) in listener.starts.items():
            assert start == end == ends[tp.partition], (tp, start, end)
        assert set(listener.restored.values()) == {0}
    finally:
        await client.close()


async def test_standby_promoted_to_active_serves_the_same_counts(kafka: KafkaTestCluster, tmp_path) -> None:
    source, sink, app_id = await _setup(kafka)
    topology = build_topology(source, sink)
    listener = RecordingRestoreListener()
    leaving = KafkaStreams(topology, _config(kafka, app_id, tmp_path / "a", num_standby_replicas=1))
    staying = KafkaStreams(
        topology, _config(kafka, app_id, tmp_path / "b", num_standby_replicas=1), restore_listener=listener
    )
    first = real_text_lines(400)
    try:
        await leaving.start()
        await staying.start()
        await kafka.produce(source, [(None, line.encode()) for line in first])
        assert await wait_for_counts(kafka, sink, expected_counts(first)) == expected_counts(first)
        # the counts can be complete before the second client's join finished: wait for the two-client layout
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        standby_tasks: set = set()
        while loop.time() < deadline:
            standby_tasks = {t for th in staying.threads for t in th.task_manager.standby}
            if standby_tasks and all(th.task_manager.active for th in leaving.threads + staying.threads):
                break
            await asyncio.sleep(0.2)
        assert standby_tasks, "with num_standby_replicas=1 and two clients, each client holds standbys"

        async def standbys_behind() -> list[TopicPartition]:
            """Changelog partitions a standby of `staying` has not applied up to their end yet."""
            changelog = f"{app_id}-counts-store-changelog"
            ends = await kafka.end_offsets(changelog, 6)
            return [
                tp
                for th in staying.threads
                for task in th.task_manager.standby.values()
                if task.state_manager is not None
                for tp, offset in task.state_manager.changelog_offsets().items()
                if offset < ends[tp.partition]
            ]

        assert await poll_until(standbys_behind, lambda behind: not behind) == []  # standbys applied everything
        restored_before = dict(listener.restored)

        await leaving.close()  # its active tasks move to `staying`, where their standbys are
        second = real_text_lines(700)[400:] + [SEED_LINE]
        await kafka.produce(source, [(None, line.encode()) for line in second])
        expected = expected_counts(first + second)
        assert await wait_for_counts(kafka, sink, expected) == expected

        promoted = {t for th in staying.threads for t in th.task_manager.active if t in standby_tasks}
        assert promoted == standby_tasks
        changelog = f"{app_id}-counts-store-changelog"
        ends = await kafka.end_offsets(changelog, 6)
        for task in promoted:
            tp = TopicPartition(changelog, task.partition)
            start, _ = listener.starts[tp]
            # the promoted task continued from the standby's position, not from offset 0
            assert start > 0 and listener.restored.get(tp, 0) - restored_before.get(tp, 0) < ends[task.partition]
    finally:
        await staying.close()
        await leaving.close()

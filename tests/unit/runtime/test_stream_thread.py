"""StreamThread's loop and rebalance callbacks on fake Kafka clients: the lost path taken when the coordinator
dropped the member or the loop stalled past the session timeout, and the happy path end to end."""

from __future__ import annotations

import asyncio
import struct
import time
import uuid
from collections.abc import AsyncIterator, Mapping
from pathlib import Path

import pytest
from aiokafka.structs import TopicPartition

from streamlet.assignment.api import AssignmentConfigs
from streamlet.assignment.high_availability import HighAvailabilityTaskAssignor
from streamlet.assignment.protocol import AssignmentInfo
from streamlet.runtime.changelog_end_offsets import ChangelogEndOffsets
from streamlet.runtime.punctuation import system_time_ms
from streamlet.runtime.restore_listener import CompositeRestoreListener
from streamlet.runtime.stream_task import StreamTask
from streamlet.runtime.stream_thread import StreamThread
from streamlet.runtime.task_creator import TaskCreator
from streamlet.runtime.task_state import TaskState
from streamlet.state.checkpoint import CHECKPOINT_FILE_NAME, OffsetCheckpoint
from streamlet.state.state_directory import StateDirectory
from streamlet.task_id import TaskId
from streamlet.topology import StreamsBuilder, Topology
from tests.unit.runtime._fakes import FakeClientSupplier, FakeConsumer, FakeKafka
from tests.unit.runtime._harness import APP, CHANGELOG, IN0, OUTPUT, T0, config, latest, metadata, new_kafka


def new_thread(
    tmp_path: Path, topology: Topology | None = None, sources: Mapping[str, int] | None = None, **overrides: object
) -> tuple[StreamThread, StateDirectory]:
    kafka = new_kafka()
    cfg = config(tmp_path, commit_interval_ms=60_000, session_timeout_ms=10_000, **overrides)
    meta = metadata(topology, sources)
    directory = StateDirectory(tmp_path, APP)
    clients = FakeClientSupplier(kafka)
    end_offsets = ChangelogEndOffsets(meta)
    end_offsets.start(clients.admin_consumer(cfg, "admin"), list(meta.changelog_partitions(T0).values()))
    thread = StreamThread(
        1,
        config=cfg,
        process_id=uuid.UUID(int=1),
        metadata=meta,
        state_directory=directory,
        task_creator=TaskCreator(meta, directory, cfg),
        end_offsets=end_offsets,
        task_assignor=HighAvailabilityTaskAssignor(),
        assignment_configs=AssignmentConfigs(),
        restore_listener=CompositeRestoreListener(),
        clients=clients,
    )
    return thread, directory


@pytest.fixture
async def thread(tmp_path: Path) -> AsyncIterator[StreamThread]:
    thread, directory = new_thread(tmp_path)
    yield thread
    directory.close()


def fake(thread: StreamThread) -> tuple[FakeConsumer, FakeKafka]:
    consumer = thread.consumer
    assert isinstance(consumer, FakeConsumer)
    return consumer, consumer.kafka


async def assigned_and_running(thread: StreamThread) -> None:
    consumer, _ = fake(thread)
    consumer.assign([IN0])
    thread.on_assignment_info(AssignmentInfo(active_tasks=(T0,)), [IN0])
    await thread.on_partitions_assigned(consumer.assignment())
    for _ in range(3):
        await thread.run_once()
    assert thread.task_manager.active[T0].state is TaskState.RUNNING


async def counted(thread: StreamThread, *words: str) -> None:
    _, kafka = fake(thread)
    for word in words:
        kafka.append(IN0, word.encode(), b"line")
    await thread.run_once()


async def test_the_loop_restores_processes_and_commits(thread: StreamThread) -> None:
    await assigned_and_running(thread)
    await counted(thread, "a", "b", "a")
    thread.task_manager.last_commit = 0.0  # the commit interval has passed
    await thread.run_once()
    _, kafka = fake(thread)
    assert latest(kafka, OUTPUT) == {"a": 2, "b": 1}
    assert kafka.committed == {IN0: 3}


async def test_no_periodic_commit_between_the_start_of_a_join_and_its_assignment(thread: StreamThread) -> None:
    """Kafka Streams' rebalanceInProgress: a commit sent while the member rejoins would carry the generation the
    join is replacing (refused, and under exactly-once the transaction with it); tasks go on processing."""
    await assigned_and_running(thread)
    consumer, kafka = fake(thread)
    await thread.subscription_info()  # the group membership starts a join
    await counted(thread, "a")
    thread.task_manager.last_commit = 0.0
    await thread.run_once()
    assert kafka.committed == {}

    thread.on_assignment_info(AssignmentInfo(active_tasks=(T0,)), [IN0])
    await thread.on_partitions_assigned(set())  # the join is over: the same task, kept running
    thread.task_manager.last_commit = 0.0
    await thread.run_once()
    assert kafka.committed == {IN0: 1}


async def _tick(task: StreamTask) -> None:
    """A timer's tick: one record sent from the task, with the task's (punctuation) timestamp."""
    task.send(OUTPUT, b"tick", struct.pack(">q", 1), task.timestamp, 0)


async def test_a_punctuation_run_from_outside_the_loop_runs_in_its_task_and_is_drained(thread: StreamThread) -> None:
    seen: list[tuple[TaskId, str | None, int]] = []

    async def tick(task: StreamTask) -> None:
        seen.append((task.task_id, task.record_context.topic, task.timestamp))
        await _tick(task)

    assert not await thread.run_as_punctuation(T0, tick)  # not assigned yet
    await assigned_and_running(thread)
    await counted(thread, "a")
    before = system_time_ms()
    assert await thread.run_as_punctuation(T0, tick)
    assert not await thread.run_as_punctuation(TaskId(0, 1), tick)  # not this thread's task

    [(task_id, topic, timestamp)] = seen
    assert task_id == T0 and topic is None and before <= timestamp <= system_time_ms()  # a punctuation's context
    assert thread.task_manager.active[T0].record_context.topic == "in"  # the last record's context is back
    _, kafka = fake(thread)
    assert [(r.key, r.timestamp) for r in kafka.records(TopicPartition(OUTPUT, 0))] == [(b"tick", timestamp)]


async def test_under_exactly_once_a_punctuation_commits_with_its_task_or_not_at_all(tmp_path: Path) -> None:
    thread, directory = new_thread(tmp_path, processing_guarantee="exactly_once_v2")
    try:
        await assigned_and_running(thread)
        _, kafka = fake(thread)
        assert await thread.run_as_punctuation(T0, _tick)
        assert kafka.records(TopicPartition(OUTPUT, 0)) == []  # in the task's open transaction
        await thread.task_manager.commit()
        assert [r.key for r in kafka.records(TopicPartition(OUTPUT, 0))] == [b"tick"]

        assert await thread.run_as_punctuation(T0, _tick)
        await thread.task_manager.handle_lost_all("a crash before the next commit")
        assert [r.key for r in kafka.records(TopicPartition(OUTPUT, 0))] == [b"tick"]  # the second tick: gone
    finally:
        directory.close()


async def test_partitions_lost_when_the_member_was_dropped_take_the_lost_path(thread: StreamThread) -> None:
    await assigned_and_running(thread)
    await counted(thread, "a", "a")
    consumer, kafka = fake(thread)
    consumer.lost = True

    await thread.on_partitions_lost(consumer.assignment())

    assert thread.task_manager.active == {}
    assert kafka.events == [] and CHANGELOG not in {tp.topic for tp in kafka.logs}


async def test_revocation_with_membership_intact_commits_and_suspends(thread: StreamThread) -> None:
    await assigned_and_running(thread)
    await counted(thread, "a", "a")
    consumer, kafka = fake(thread)

    await thread.on_partitions_revoked(consumer.assignment())

    assert thread.task_manager.active[T0].state is TaskState.SUSPENDED
    assert kafka.committed == {IN0: 2} and latest(kafka, CHANGELOG) == {"a": 2}


async def test_a_loop_stalled_past_the_session_timeout_flushes_nothing_and_rejoins(thread: StreamThread) -> None:
    await assigned_and_running(thread)
    await counted(thread, "a", "a")
    consumer, kafka = fake(thread)
    thread.task_manager.last_commit = 0.0  # a commit is due: a zombie would flush its stale counts here
    thread.stall_watch.mark_stalled()  # SIGSTOP'd for longer than session_timeout_ms

    await thread.run_once()

    assert thread.task_manager.active == {} and consumer.rejoin_requested
    assert kafka.events == [] and kafka.committed == {}


async def test_a_process_frozen_while_processing_sends_nothing_it_computed(
    thread: StreamThread, monkeypatch: pytest.MonkeyPatch
) -> None:
    await assigned_and_running(thread)
    consumer, kafka = fake(thread)
    thread.task_manager.last_commit = 0.0  # a commit is due right after this batch
    process = thread.task_manager.process

    def frozen_midway(batch):  # type: ignore[no-untyped-def]
        process(batch)
        thread.stall_watch.mark_stalled()  # SIGSTOP'd while processing, for longer than session_timeout_ms

    monkeypatch.setattr(thread.task_manager, "process", frozen_midway)
    await counted(thread, "a", "a")

    assert thread.task_manager.active == {} and consumer.rejoin_requested
    assert kafka.events == [] and kafka.committed == {}


async def test_a_commit_after_a_freeze_takes_the_lost_path(thread: StreamThread) -> None:
    await assigned_and_running(thread)
    await counted(thread, "a", "a")
    consumer, kafka = fake(thread)
    thread.stall_watch.mark_stalled()

    assert await thread.task_manager.commit_or_migrate() is False

    assert thread.task_manager.active == {} and consumer.rejoin_requested
    assert kafka.events == [] and kafka.committed == {}


async def test_probing_rebalance_is_requested_at_its_deadline(thread: StreamThread) -> None:
    consumer, _ = fake(thread)
    deadline = int(time.time() * 1000) - 1
    thread.on_assignment_info(AssignmentInfo(next_rebalance_ms=deadline), [])
    await thread.on_partitions_assigned(consumer.assignment())
    assert not consumer.rejoin_requested

    await thread.run_once()

    assert consumer.rejoin_requested


async def test_withheld_tasks_rejoin_from_within_the_rebalance(thread: StreamThread) -> None:
    """`next_rebalance_ms = 0` (tasks withheld until their owner revokes them): the rejoin is asked in the assignment
    callback, before the membership's next join starts, not later from the loop (which would start one more)."""
    consumer, _ = fake(thread)
    thread.on_assignment_info(AssignmentInfo(next_rebalance_ms=0), [])
    await thread.on_partitions_assigned(set())
    assert consumer.rejoin_requested


async def test_task_dirs_on_disk_are_locked_before_the_join_and_reported_from_their_checkpoint(
    thread: StreamThread, tmp_path: Path
) -> None:
    other = TaskId(0, 1)
    task_dir = tmp_path / APP / str(other)
    (task_dir / "rocksdb" / "counts").mkdir(parents=True)
    (task_dir / "rocksdb" / "counts" / "CURRENT").write_text("x")
    OffsetCheckpoint(task_dir / CHECKPOINT_FILE_NAME).write({TopicPartition(CHANGELOG, 1): 41})
    assert thread.task_manager.task_offset_sums() == {}  # not locked yet: not this thread's to report

    info = await thread.subscription_info()  # what the group membership asks before every join

    assert info.task_offset_sums == {other: 41}


async def test_a_task_waiting_for_an_idle_partition_processes_on_a_later_loop_without_new_records(
    tmp_path: Path,
) -> None:
    builder = StreamsBuilder()
    builder.stream("a", "str", "str").merge(builder.stream("b", "str", "str")).to(OUTPUT, "str", "str")
    a0, b0 = TopicPartition("a", 0), TopicPartition("b", 0)
    thread, directory = new_thread(tmp_path, builder.build(), {"a": 1, "b": 1}, max_task_idle_ms=200)
    try:
        consumer, kafka = fake(thread)
        consumer.assign([a0, b0])
        thread.on_assignment_info(AssignmentInfo(active_tasks=(T0,)), [a0, b0])
        await thread.on_partitions_assigned(consumer.assignment())
        await thread.run_once()
        kafka.append(a0, b"k", b"a5", 5)
        await thread.run_once()  # b is caught up and empty: a5 waits up to max_task_idle_ms for it
        assert kafka.logs.get(TopicPartition(OUTPUT, 0)) is None
        wait = thread.task_manager.ms_until_idle_deadline()
        assert wait is not None and 0 < wait <= 200  # what the next poll waits at most
        await asyncio.sleep(wait / 1000)
        await thread.run_once()  # no new record: the deadline passed, a5 goes on without b
        assert kafka.logs[TopicPartition(OUTPUT, 0)] == [(b"k", b"a5", 5)]
        thread.task_manager.last_commit = 0.0
        await thread.run_once()
        assert kafka.committed == {a0: 1}
    finally:
        directory.close()


@pytest.mark.parametrize(("limit", "commits"), [(64 * 1024 * 1024, False), (100, True)])
async def test_under_exactly_once_uncommitted_state_past_the_bound_commits_early(
    tmp_path: Path, limit: int, commits: bool
) -> None:
    """KIP-892's statestore.uncommitted.max.bytes: the commit interval (a minute here) has not passed, but a
    thread whose transactional stores buffer more than its share commits at once instead of growing."""
    thread, directory = new_thread(
        tmp_path,
        processing_guarantee="exactly_once_v2",
        statestore_cache_max_bytes=0,  # every count goes to the store at once
        statestore_uncommitted_max_bytes=limit,
    )
    try:
        await assigned_and_running(thread)
        _, kafka = fake(thread)
        await counted(thread, "a", "b", "c")
        assert (kafka.committed == {IN0: 3}) is commits
        assert (thread.task_manager.uncommitted_bytes() == 0) is commits
    finally:
        directory.close()

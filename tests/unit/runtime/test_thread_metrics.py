"""A stream thread's metric counters: on their own, and as the task manager feeds them (fake Kafka, real RocksDB)."""

from __future__ import annotations

from pathlib import Path

from streamlet.runtime.restore_listener import RestoreProgressTracker
from streamlet.runtime.task_state import TaskState
from streamlet.runtime.thread_metrics import OBSERVE_INTERVAL_S, ThreadMetrics
from streamlet.task_id import TaskId
from tests.unit.runtime._fakes import FakeKafka
from tests.unit.runtime._harness import CHANGELOG0, IN0, T0, Harness, int64, new_kafka

T1 = TaskId(0, 1)


def test_time_is_charged_to_the_tasks_not_running_at_the_previous_observation() -> None:
    metrics = ThreadMetrics()
    metrics.observe([T0], now=10.0)  # the first observation only starts the clock
    assert metrics.not_running_s == {T0: 0.0}
    metrics.observe([T0, T1], now=12.5)  # T1 just became not RUNNING: none of the 2.5 s is its
    metrics.observe([], now=13.0)
    metrics.observe([], now=20.0)
    assert metrics.not_running_s == {T0: 3.0, T1: 0.5}


def test_observations_are_due_once_per_interval() -> None:
    metrics = ThreadMetrics()
    assert metrics.due(5.0)
    metrics.observe([], now=5.0)
    assert not metrics.due(5.0 + OBSERVE_INTERVAL_S / 2)
    assert metrics.due(5.0 + OBSERVE_INTERVAL_S * 1.01)


def test_commit_latencies_are_counted_and_windowed() -> None:
    metrics = ThreadMetrics()
    metrics.record_commit(0.010, now=1.0)
    metrics.record_commit(0.030, now=2.0)
    metrics.record_commit(0.020, now=3.0)
    assert metrics.commits == 3 and round(metrics.commit_total_s, 6) == 0.06
    assert metrics.commit_latencies_since(1.5) == [0.030, 0.020]
    assert metrics.commit_latencies_since(3.0) == []


def words(kafka: FakeKafka, count: int, partition_key: bytes = b"a") -> None:
    for _ in range(count):
        kafka.append(IN0, partition_key, b"line")


async def test_the_task_manager_counts_processed_records_rebalances_and_commits(tmp_path: Path) -> None:
    kafka = new_kafka()
    h = Harness(kafka, tmp_path)
    try:
        h.assign(T0)
        assert h.task_manager.task_states() == {T0: "RESTORING"}
        await h.task_manager.restore(timeout_ms=0)
        words(kafka, 5)
        assert await h.poll_and_process() == 5
        words(kafka, 2)
        await h.poll_and_process()
        await h.task_manager.commit()
        metrics = h.task_manager.metrics
        assert metrics.processed == {T0: 7}
        assert metrics.rebalances == 1 and metrics.commits == 1
        assert h.task_manager.task_states() == {T0: "RUNNING"}
        h.assign(standby=(T0,))  # the task moved to a standby here: its count stays
        assert metrics.rebalances == 2 and metrics.processed == {T0: 7}
        assert h.task_manager.task_states() == {T0: "STANDBY"}
    finally:
        h.close()


async def test_a_restoring_task_is_charged_until_it_runs(tmp_path: Path) -> None:
    kafka = new_kafka()
    for value in range(1, 8):
        kafka.append(CHANGELOG0, b"a", int64(value))
    tracker = RestoreProgressTracker()
    h = Harness(kafka, tmp_path, chunk=3, listener=tracker)
    try:
        h.assign(T0)
        h.task_manager.observe_states(100.0)
        await h.task_manager.restore(timeout_ms=0)  # 3 of 7
        [progress] = tracker.in_progress()
        assert (progress.restored, progress.remaining, progress.total) == (3, 4, 7)
        h.task_manager.observe_states(101.0)
        while h.task_manager.active[T0].state is TaskState.RESTORING:
            await h.task_manager.restore(timeout_ms=0)
        assert tracker.in_progress() == []  # ended
        h.task_manager.observe_states(103.0)  # RUNNING from here on
        h.task_manager.observe_states(110.0)
        assert h.task_manager.metrics.not_running_s == {T0: 3.0}
    finally:
        h.close()


async def test_a_restoration_cut_short_by_a_rebalance_is_no_longer_in_progress(tmp_path: Path) -> None:
    kafka = new_kafka()
    for value in range(1, 8):
        kafka.append(CHANGELOG0, b"a", int64(value))
    tracker = RestoreProgressTracker()
    h = Harness(kafka, tmp_path, chunk=3, listener=tracker)
    try:
        h.assign(T0)
        await h.task_manager.restore(timeout_ms=0)
        assert len(tracker.in_progress()) == 1
        h.assign()  # the task moved away mid-restore
        await h.task_manager.restore(timeout_ms=0)
        assert tracker.in_progress() == []
    finally:
        h.close()

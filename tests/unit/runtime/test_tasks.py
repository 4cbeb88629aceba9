"""Tasks: the registry of a thread's tasks keeps its input-partition index, its grouped tasks and its pending
tasks' retries consistent with the task maps through every add and remove."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, cast

import pytest
from aiokafka.structs import TopicPartition

from streamlet.runtime.standby_task import StandbyTask
from streamlet.runtime.stream_task import StreamTask
from streamlet.runtime.tasks import OpenRetry, Tasks
from streamlet.task_id import TaskId

T0, T1, T2 = TaskId(0, 0), TaskId(0, 1), TaskId(1, 0)
A0, A1, B0, C0 = TopicPartition("a", 0), TopicPartition("a", 1), TopicPartition("b", 0), TopicPartition("c", 0)


@dataclass(eq=False)
class _Task:
    """What the registry reads of a task: its id, its input partitions and whether it queues them."""

    task_id: TaskId
    partitions: frozenset[TopicPartition] = frozenset()
    partition_group: Any = None  # set (to anything) for a task with several input partitions


def active(task_id: TaskId, *partitions: TopicPartition) -> StreamTask:
    group = object() if len(partitions) > 1 else None
    return cast(StreamTask, _Task(task_id, frozenset(partitions), group))


def standby(task_id: TaskId) -> StandbyTask:
    return cast(StandbyTask, _Task(task_id))


def test_an_active_task_is_found_by_id_and_by_each_input_partition() -> None:
    tasks = Tasks()
    t0, t2 = active(T0, A0), active(T2, B0, C0)
    tasks.add_active(t0)
    tasks.add_active(t2)
    assert dict(tasks.active) == {T0: t0, T2: t2}
    assert tasks.by_partition.get(A0) is t0
    assert tasks.by_partition.get(B0) is t2 and tasks.by_partition.get(C0) is t2
    assert tasks.by_partition.get(A1) is None
    assert dict(tasks.by_partition) == {A0: t0, B0: t2, C0: t2}
    assert list(tasks.grouped) == [t2]  # only the task with several input partitions queues its records


def test_removing_an_active_task_drops_it_from_every_index() -> None:
    tasks = Tasks()
    t0, t1, t2 = active(T0, A0), active(T1, A1), active(T2, B0, C0)
    for task in (t0, t1, t2):
        tasks.add_active(task)
    assert tasks.remove_active(T2) is t2
    assert tasks.remove_active(T0) is t0
    assert dict(tasks.active) == {T1: t1}
    assert dict(tasks.by_partition) == {A1: t1}
    assert list(tasks.grouped) == []
    assert tasks.remove_active(T0) is None  # removing twice is harmless: a close that failed half-way


def test_grouped_tasks_keep_the_order_they_were_added_in() -> None:
    tasks = Tasks()
    d0, e0 = TopicPartition("d", 0), TopicPartition("e", 0)
    first, second, third = active(T0, A0, A1), active(T1, B0, C0), active(T2, d0, e0)
    tasks.add_active(first)
    tasks.add_active(second)
    tasks.remove_active(T0)
    tasks.add_active(third)
    tasks.add_active(first)
    assert list(tasks.grouped) == [second, third, first]
    assert list(tasks.active) == [T1, T2, T0]  # as the id map iterates


def test_an_active_task_is_registered_once_and_a_partition_has_one_task() -> None:
    tasks = Tasks()
    tasks.add_active(active(T0, A0))
    with pytest.raises(ValueError, match="already registered"):
        tasks.add_active(active(T0, A0))
    with pytest.raises(ValueError, match="already task 0_0's"):
        tasks.add_active(active(T1, A0))
    assert tasks.by_partition.get(A0) is tasks.active[T0]
    assert list(tasks.active) == [T0]


def test_standbys_are_kept_by_id() -> None:
    tasks = Tasks()
    s0 = standby(T0)
    tasks.add_standby(s0)
    with pytest.raises(ValueError, match="already registered"):
        tasks.add_standby(standby(T0))
    assert dict(tasks.standby) == {T0: s0}
    assert tasks.by_partition == {}  # standbys read no input partitions
    assert tasks.remove_standby(T0) is s0
    assert tasks.remove_standby(T0) is None
    assert dict(tasks.standby) == {}


def test_the_maps_are_read_only_views() -> None:
    tasks = Tasks()
    with pytest.raises(TypeError):
        tasks.active[T0] = active(T0, A0)  # type: ignore[index]
    with pytest.raises(TypeError):
        tasks.pending[T0] = True  # type: ignore[index]
    tasks.add_active(active(T0, A0))
    assert T0 in tasks.active and tasks.active == {T0: tasks.active[T0]}


def test_pending_tasks_remember_whether_they_are_active() -> None:
    tasks = Tasks()
    assert not tasks.has_pending()
    tasks.add_pending(T1, active=True)
    tasks.add_pending(T0, active=False)
    tasks.add_pending(T2, active=True)
    tasks.add_pending(T0, active=True)  # a standby assigned again as active: it keeps its place
    assert list(tasks.pending.items()) == [(T1, True), (T0, True), (T2, True)]
    tasks.remove_pending(T1)
    assert tasks.has_pending() and list(tasks.pending) == [T0, T2]


def test_a_new_assignment_forgets_the_pending_tasks_it_took_away_and_their_retries() -> None:
    tasks = Tasks()
    for task_id in (T0, T1, T2):
        tasks.add_pending(task_id, active=True)
        tasks.open_failed(task_id, now=100.0)
    tasks.retain_pending({T2, T0, TaskId(5, 5)})
    assert list(tasks.pending) == [T0, T2]  # in their order, and nothing added
    assert tasks.open_retry(T1) is None
    tasks.add_pending(T1, active=True)
    assert tasks.open_retry(T1) is None  # assigned again: it starts over
    assert tasks.open_retry(T0) is not None


def test_a_failed_open_backs_off_exponentially_up_to_ten_seconds() -> None:
    tasks = Tasks()
    tasks.add_pending(T0, active=True)
    assert tasks.open_retry(T0) is None
    waits = []
    logged = []
    for _ in range(10):
        retry = tasks.open_failed(T0, now=50.0)
        waits.append(round(retry.next_attempt - 50.0, 3))
        logged.append(retry.should_log())
    assert waits == [0.1, 0.2, 0.4, 0.8, 1.6, 3.2, 6.4, 10.0, 10.0, 10.0]
    assert logged == [True, True, False, True, False, False, False, True, False, False]  # 1, 2, 4, 8
    assert tasks.open_retry(T0) == OpenRetry(10, 60.0)


def test_a_created_task_drops_its_retries() -> None:
    tasks = Tasks()
    tasks.add_pending(T0, active=True)
    tasks.open_failed(T0, now=1.0)
    tasks.remove_pending(T0)
    assert tasks.open_retry(T0) is None and not tasks.has_pending()
    with pytest.raises(KeyError, match="not pending"):
        tasks.open_failed(T0, now=2.0)

"""LocalTasks: a table's items() sees the stores of the client's RUNNING active tasks, across threads."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from streamlet.runtime.local_tasks import LocalTasks
from streamlet.runtime.task_state import TaskState
from streamlet.task_id import TaskId
from tests.unit.runtime._fakes import FakeKafka
from tests.unit.runtime._harness import IN0, T0, Harness, new_kafka

T1 = TaskId(0, 1)


@dataclass(eq=False)
class _Task:
    task_id: TaskId
    state: TaskState
    stores: dict[str, Any] = field(default_factory=dict)


def test_only_running_tasks_with_the_store_in_task_order() -> None:
    local = LocalTasks()
    tasks = [
        _Task(TaskId(1, 2), TaskState.RUNNING, {"counts": "s12"}),
        _Task(TaskId(0, 5), TaskState.RUNNING, {"counts": "s05"}),
        _Task(TaskId(1, 0), TaskState.RESTORING, {"counts": "s10"}),
        _Task(TaskId(1, 1), TaskState.SUSPENDED, {"counts": "s11"}),
        _Task(TaskId(0, 0), TaskState.RUNNING, {"other": "x"}),
    ]
    for task in tasks:
        local.add(task)
    assert local.running_stores("counts") == ["s05", "s12"]
    tasks[2].state = TaskState.RUNNING
    assert local.running_stores("counts") == ["s05", "s10", "s12"]


def test_a_task_nothing_references_drops_out() -> None:
    local = LocalTasks()
    task = _Task(T0, TaskState.RUNNING, {"counts": "s"})
    local.add(task)
    del task
    gc.collect()
    assert local.running_stores("counts") == []


@pytest.fixture
def harness(tmp_path: Path) -> Iterator[Harness]:
    h = Harness(new_kafka(), tmp_path)
    yield h
    h.close()


async def test_tasks_of_a_thread_see_each_others_stores_until_one_is_revoked(harness: Harness) -> None:
    kafka: FakeKafka = harness.kafka
    harness.assign(T0, T1)
    await harness.task_manager.restore(timeout_ms=0)
    kafka.append(IN0, b"a", b"line")
    assert await harness.poll_and_process() == 1
    t0, t1 = harness.task_manager.active[T0], harness.task_manager.active[T1]
    assert t0.local_stores("counts") == [t0.stores["counts"], t1.stores["counts"]]
    assert [k for store in t0.local_stores("counts") for k, _ in store.all()] == [b"a"]

    harness.assign(T0)  # T1 revoked: it is no longer this client's
    assert t0.local_stores("counts") == [t0.stores["counts"]]

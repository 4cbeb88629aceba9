"""The active tasks one client runs, across its stream threads: what a Faust-style table's `items()` covers.

Faust's table iteration covers every partition the worker owns. A streamlet task only sees its own stores, so
the client's TaskCreator registers each active task it creates here, and a table asks for the stores of the
RUNNING ones. Weak references: a closed task drops out without the task manager having to say so.
"""

from __future__ import annotations

import weakref
from collections.abc import Mapping
from typing import Any, Protocol

from streamlet.runtime.task_state import TaskState
from streamlet.task_id import TaskId

__all__ = ["LocalTasks"]


class _Task(Protocol):
    task_id: TaskId
    state: TaskState

    @property
    def stores(self) -> Mapping[str, Any]: ...


class LocalTasks:
    """Every active task of one client (KafkaStreams), weakly held."""

    def __init__(self) -> None:
        self._tasks: weakref.WeakSet[Any] = weakref.WeakSet()

    def add(self, task: _Task) -> None:
        self._tasks.add(task)

    def running_stores(self, name: str) -> list[Any]:
        """The store `name` of every RUNNING task that has one, in task order (restoring tasks are not ready)."""
        tasks = sorted(
            (t for t in self._tasks if t.state is TaskState.RUNNING and name in t.stores), key=lambda t: t.task_id
        )
        return [t.stores[name] for t in tasks]

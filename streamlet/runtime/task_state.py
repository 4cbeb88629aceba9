"""Task lifecycle states and their allowed transitions (Kafka Streams' `Task.State`).

Kafka's table, which both active and standby tasks follow:

    CREATED   -> RESTORING, SUSPENDED
    RESTORING -> RUNNING, SUSPENDED
    RUNNING   -> SUSPENDED
    SUSPENDED -> RESTORING, CLOSED
    CLOSED    -> CREATED          (a corrupted task is revived)

A task that is not restoring still passes through RESTORING (restoration completes at once), and a task is
suspended before it is closed, so every path is one of these edges. `transition_to` refuses any other: a
transition the table does not allow is a bug in the runtime, caught where it happens instead of surfacing as
a task that processes while it should not.
"""

from __future__ import annotations

import enum

from streamlet.errors import StreamletError


class TaskState(enum.Enum):
    CREATED = "CREATED"
    RESTORING = "RESTORING"
    RUNNING = "RUNNING"
    SUSPENDED = "SUSPENDED"
    CLOSED = "CLOSED"


_ALLOWED: dict[TaskState, frozenset[TaskState]] = {
    TaskState.CREATED: frozenset({TaskState.RESTORING, TaskState.SUSPENDED}),
    TaskState.RESTORING: frozenset({TaskState.RUNNING, TaskState.SUSPENDED}),
    TaskState.RUNNING: frozenset({TaskState.SUSPENDED}),
    TaskState.SUSPENDED: frozenset({TaskState.RESTORING, TaskState.CLOSED}),
    TaskState.CLOSED: frozenset({TaskState.CREATED}),
}


class IllegalTaskStateTransition(StreamletError):
    """The runtime asked a task for a transition Kafka Streams' state table does not allow."""


def checked_transition(task: object, current: TaskState, new: TaskState) -> TaskState:
    """`new`, if `current -> new` is an edge of the table; raises naming the task otherwise."""
    if new not in _ALLOWED[current]:
        raise IllegalTaskStateTransition(f"task {task}: invalid transition from {current.name} to {new.name}")
    return new

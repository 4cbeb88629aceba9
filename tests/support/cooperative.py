"""Per-client thread distribution for the Java-computed reference cases (the cooperative step itself is
`streamlet.assignment.thread_assignment.apply_pending_revocations`, which the live assignor runs)."""

from __future__ import annotations

from collections.abc import Iterable

from streamlet.assignment.client_state import ClientState
from streamlet.assignment.thread_assignment import ThreadTasks, distribute_tasks_to_threads


def distribute_client(client: ClientState, consumers: Iterable[str] | None = None) -> dict[str, ThreadTasks]:
    """`distribute_tasks_to_threads` for a ClientState after assignment (consumers default to its own)."""
    members = client.consumer_to_previous_stateful_tasks.keys() if consumers is None else consumers
    return distribute_tasks_to_threads(
        members, client.active_tasks, client.standby_tasks, client.task_lags, client.prev_tasks_by_lag
    )

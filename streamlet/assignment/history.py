"""Assignment history: one versioned JSON event per rebalance, built from what the group leader computed.

Seed 000's experiment watched where every task went by grepping the leader's log lines. Log lines are for
people: their format drifts, they carry no lags and no per-thread split, and a rotated log loses rounds.
The leader therefore appends one event per rebalance to `<application_id>-assignments`. This module is the
pure half: it turns the leader's inputs (the clients' `ClientState` with lags) and outputs (the assignor's
`TaskAssignment`, the per-thread split) into a JSON-ready dict, with no I/O, so every field is testable
without Kafka. `streamlet.runtime.assignment_history` is the I/O half that produces it.

Warmups are not a separate kind of task on the wire (Kafka Streams sends them as standbys), so the event
derives them the way the assignor's own notions define them: for each stateful task, standbys beyond
`num_standby_replicas` are warmups, taken from the copies that are not caught up (`is_caught_up` of the
HighAvailabilityTaskAssignor), most-lagging first.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from streamlet.assignment.api import AssignmentConfigs, KafkaStreamsAssignment
from streamlet.assignment.client_state import ClientState
from streamlet.assignment.high_availability import is_caught_up
from streamlet.assignment.process_id import java_uuid_key
from streamlet.task_id import TaskId

#: Version of the event's JSON shape; readers refuse versions they do not know rather than misread them.
HISTORY_VERSION = 1
EVENT_TYPE = "streamlet.assignment"
#: Why a rebalance happened, as far as the leader can tell (see `infer_trigger`).
TRIGGERS = ("join", "leave", "probing", "revocation", "metadata", "unknown")


def assignment_history_topic(application_id: str) -> str:
    """The internal topic holding an application's assignment history (one partition, time-retained)."""
    return f"{application_id}-assignments"


@dataclass(frozen=True)
class ThreadTasks:
    """One stream thread's (consumer's) share of its client's tasks."""

    member_id: str
    active: Sequence[TaskId]
    standby: Sequence[TaskId]
    #: cooperative rebalancing: tasks withheld this round until their previous owner revokes them
    pending_revocation: Sequence[TaskId] = ()


def _names(tasks: Sequence[TaskId] | set[TaskId] | frozenset[TaskId]) -> list[str]:
    return [str(t) for t in sorted(tasks)]


def classify_warmups(
    clients: Mapping[uuid.UUID, ClientState],
    standby_by_client: Mapping[uuid.UUID, Sequence[TaskId]],
    configs: AssignmentConfigs,
) -> dict[uuid.UUID, set[TaskId]]:
    """Which standbys are warmups: per task, the copies beyond `num_standby_replicas` that are not caught up.

    Kafka Streams does not mark warmups in the assignment; they are the extra standbys an assignor adds on a
    movement's destination until it catches up. Counting per task is exact for the HighAvailabilityTaskAssignor
    and for `balanced` (both keep `num_standby_replicas` real standbys and add warmups on top).
    """
    holders: dict[TaskId, list[uuid.UUID]] = {}
    for pid, tasks in standby_by_client.items():
        for task in tasks:
            holders.setdefault(task, []).append(pid)
    warmups: dict[uuid.UUID, set[TaskId]] = {pid: set() for pid in standby_by_client}
    for task, pids in holders.items():
        extra = len(pids) - configs.num_standby_replicas
        if extra <= 0:
            continue
        candidates = [
            p
            for p in pids
            if p in clients
            and clients[p].is_stateful(task)
            and not is_caught_up(clients[p].lag_for(task), configs.acceptable_recovery_lag)
        ]
        candidates.sort(key=lambda p: (-clients[p].lag_for(task), java_uuid_key(p)))
        for pid in candidates[:extra]:
            warmups[pid].add(task)
    return warmups


def infer_trigger(
    previous: Mapping[str, Any] | None, clients: Mapping[uuid.UUID, ClientState], now_ms: int
) -> tuple[str, list[str], list[str]]:
    """(trigger, joined process ids, left process ids) from the previous event this leader wrote.

    The group protocol does not tell the leader why members rejoined, so the trigger is inferred: a new
    client or more threads is a join, a missing client or fewer threads a leave, the immediate follow-up of a
    round that withheld tasks (cooperative rebalancing) is revocation, a due follow-up of the previous round is
    probing, anything else (e.g. a topic's partitions changed) is metadata. Without a
    previous event (this client just became leader) a client reporting no tasks at all counts as a join,
    otherwise the trigger is unknown.
    """
    current = {str(pid): c.capacity for pid, c in clients.items()}
    if previous is None:
        fresh = sorted(
            str(pid)
            for pid, c in clients.items()
            if not c.previous_active_tasks and not c.previous_standby_tasks and not c.task_offset_sums
        )
        return ("join" if fresh else "unknown"), fresh, []
    before = {str(c["process_id"]): int(c.get("capacity", 0)) for c in previous.get("clients", [])}
    joined = sorted(p for p in current if p not in before)
    left = sorted(p for p in before if p not in current)
    if joined or any(current[p] > before[p] for p in current if p in before):
        return "join", joined, left
    if left or any(current[p] < before[p] for p in current if p in before):
        return "leave", joined, left
    if any(t.get("pending_revocation") for c in previous.get("clients", []) for t in c.get("threads", [])):
        return "revocation", [], []
    deadline = previous.get("followup_deadline_ms")
    if previous.get("followup_scheduled") and isinstance(deadline, int) and now_ms >= deadline:
        return "probing", [], []
    return "metadata", [], []


def _directly_before(previous: Mapping[str, Any], generation: int | None) -> bool:
    """Whether `previous` is the event of the generation just before `generation` (unknown counts as yes)."""
    before = previous.get("generation")
    return not isinstance(before, int) or generation is None or generation == before + 1


def build_assignment_event(
    *,
    application_id: str,
    generation: int | None,
    timestamp_ms: int,
    assignor: str,
    leader_process_id: uuid.UUID,
    leader_thread: str,
    configs: AssignmentConfigs,
    all_tasks: Sequence[TaskId],
    stateful_tasks: Sequence[TaskId],
    clients: Mapping[uuid.UUID, ClientState],
    host_infos: Mapping[uuid.UUID, str],
    assignment: Mapping[uuid.UUID, KafkaStreamsAssignment],
    threads: Mapping[uuid.UUID, Sequence[ThreadTasks]],
    previous: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The versioned JSON event of one rebalance (see the module docstring); pure and deterministic.

    Clients are listed in java.util.UUID order (the order the assignor walks them). `lags` are the
    lags the assignor saw, before assigning: -2 means the client runs the task as a RUNNING active.
    """
    if previous is not None and not _directly_before(previous, generation):
        previous = None  # another client led the rebalances in between: its last event says nothing about now
    trigger, joined, left = infer_trigger(previous, clients, timestamp_ms)
    standby_by_client = {pid: (assignment[pid].standby_tasks() if pid in assignment else []) for pid in clients}
    warmups = classify_warmups(clients, standby_by_client, configs)
    entries: list[dict[str, Any]] = []
    deadlines: list[int] = []
    for pid in sorted(clients, key=java_uuid_key):
        state = clients[pid]
        ka = assignment.get(pid)
        deadline = ka.followup_rebalance_deadline if ka is not None else None
        if deadline is not None:
            deadlines.append(deadline)
        standby = standby_by_client[pid]
        entries.append(
            {
                "process_id": str(pid),
                "host": host_infos.get(pid, ""),
                "capacity": state.capacity,
                "active": _names(ka.active_tasks() if ka is not None else []),
                "standby": _names([t for t in standby if t not in warmups[pid]]),
                "warmup": _names(warmups[pid]),
                "threads": [
                    {
                        "member_id": t.member_id,
                        "active": _names(t.active),
                        "standby": _names(t.standby),
                        "pending_revocation": _names(t.pending_revocation),
                    }
                    for t in threads.get(pid, ())
                ],
                "previous_active": _names(state.previous_active_tasks),
                "previous_standby": _names(state.previous_standby_tasks),
                "lags": {str(t): state.task_lags[t] for t in sorted(state.task_lags)},
                "followup_deadline_ms": deadline,
            }
        )
    return {
        "type": EVENT_TYPE,
        "version": HISTORY_VERSION,
        "application_id": application_id,
        "generation": generation,
        "timestamp_ms": timestamp_ms,
        "assignor": assignor,
        "leader": {"process_id": str(leader_process_id), "thread": leader_thread},
        "trigger": trigger,
        "joined": joined,
        "left": left,
        "configs": {
            "num_standby_replicas": configs.num_standby_replicas,
            "max_warmup_replicas": configs.max_warmup_replicas,
            "acceptable_recovery_lag": configs.acceptable_recovery_lag,
            "probing_rebalance_interval_ms": configs.probing_rebalance_interval_ms,
        },
        "tasks": _names(all_tasks),
        "stateful_tasks": _names(stateful_tasks),
        "clients": entries,
        "followup_scheduled": bool(deadlines),
        "followup_deadline_ms": min(deadlines) if deadlines else None,
    }
